package doccheck

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxCommentWidth is the widest a comment line may be, a tab counting tabWidth columns.
const (
	maxCommentWidth = 100
	tabWidth        = 4
)

// TestCommentWidth: every comment line of every Go file in the repository, nested modules
// included, fits in maxCommentWidth columns, so that doc comments read in a terminal and
// in go doc without wrapping. An example's Output lines print what the program prints, and
// a comment of one word (a URL, a directive) cannot be wrapped: both are exempt.
func TestCommentWidth(t *testing.T) {
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		files++
		src := fset.File(f.Pos())
		lines := sourceLines(t, path)
		for _, group := range f.Comments {
			output := false
			for _, c := range group.List {
				first := fset.Position(c.Pos()).Line
				for i, text := range strings.Split(c.Text, "\n") {
					body := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(text, "//"), "/*"))
					if strings.HasPrefix(body, "Output:") || strings.HasPrefix(body, "Unordered output:") {
						output = true
					}
					if output || !strings.ContainsAny(body, " \t") {
						continue
					}
					n := first + i
					if w := width(lines[n-1]); w > maxCommentWidth {
						rel, _ := filepath.Rel(root, src.Name())
						t.Errorf("%s:%d: a comment line of %d columns (at most %d)", rel, n, w, maxCommentWidth)
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("walked %d Go files: the walk misses the repository", files)
	}
}

// width is line's width in columns, a tab counting up to the next multiple of tabWidth.
func width(line string) int {
	w := 0
	for _, r := range line {
		if r == '\t' {
			w += tabWidth - w%tabWidth
		} else {
			w++
		}
	}
	return w
}

// sourceLines returns the lines of the file at path.
func sourceLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}
