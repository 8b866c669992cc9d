package doccheck

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"regexp"
	"slices"
	"strings"
)

// Block is one fenced Go block of a markdown file.
type Block struct {
	File   string // the markdown file, as given to Extract
	Line   int    // the line of the block's first line of code, from 1
	Code   string // the code between the fences, its common indentation removed
	Assume string // the parameter list of an assume comment, "" when none
}

// Imports maps the package names a block may use without importing them to their paths.
var Imports = map[string]string{
	"ratelimit":    "github.com/sluice-go/ratelimit",
	"local":        "github.com/sluice-go/ratelimit/local",
	"distributed":  "github.com/sluice-go/ratelimit/distributed",
	"fallback":     "github.com/sluice-go/ratelimit/fallback",
	"ginmw":        "github.com/sluice-go/ratelimit/ginmw",
	"httpmw":       "github.com/sluice-go/ratelimit/httpmw",
	"grpcmw":       "github.com/sluice-go/ratelimit/grpcmw",
	"keyfuncs":     "github.com/sluice-go/ratelimit/keyfuncs",
	"grpckeys":     "github.com/sluice-go/ratelimit/keyfuncs/grpckeys",
	"httpkeys":     "github.com/sluice-go/ratelimit/keyfuncs/httpkeys",
	"headers":      "github.com/sluice-go/ratelimit/headers",
	"observe":      "github.com/sluice-go/ratelimit/observe",
	"otelmetrics":  "github.com/sluice-go/ratelimit/otelmetrics",
	"slogobserver": "github.com/sluice-go/ratelimit/slogobserver",
	"concurrency":  "github.com/sluice-go/ratelimit/concurrency",
	"clocal":       "github.com/sluice-go/ratelimit/concurrency/local",
	"rules":        "github.com/sluice-go/ratelimit/rules",
	"redis":        "github.com/redis/go-redis/v9",
	"gin":          "github.com/gin-gonic/gin",
	"grpc":         "google.golang.org/grpc",
	"codes":        "google.golang.org/grpc/codes",
	"status":       "google.golang.org/grpc/status",
	"metadata":     "google.golang.org/grpc/metadata",
	"credentials":  "google.golang.org/grpc/credentials",
	"insecure":     "google.golang.org/grpc/credentials/insecure",
	"sdkmetric":    "go.opentelemetry.io/otel/sdk/metric",
	"context":      "context",
	"errors":       "errors",
	"flag":         "flag",
	"fmt":          "fmt",
	"io":           "io",
	"json":         "encoding/json",
	"log":          "log",
	"math":         "math",
	"http":         "net/http",
	"netip":        "net/netip",
	"os":           "os",
	"signal":       "os/signal",
	"slog":         "log/slog",
	"strings":      "strings",
	"sync":         "sync",
	"syscall":      "syscall",
	"time":         "time",
}

var assumeRE = regexp.MustCompile(`^<!--\s*assume:\s*(.*?)\s*-->$`)

// Extract returns the Go blocks of a markdown file's content; file names them in errors.
func Extract(file string, content []byte) ([]Block, error) {
	var (
		blocks []Block
		prev   string // the last non-blank line outside a block
		cur    *Block
		indent string
		lines  []string
		n      int
	)
	sc := bufio.NewScanner(bytes.NewReader(content))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if cur == nil {
			if trimmed == "```go" {
				cur = &Block{File: file, Line: n + 1}
				indent = line[:len(line)-len(strings.TrimLeft(line, " \t"))]
				if m := assumeRE.FindStringSubmatch(prev); m != nil {
					cur.Assume = m[1]
				}
				lines = lines[:0]
			} else if trimmed != "" {
				prev = trimmed
			}
			continue
		}
		if trimmed == "```" {
			cur.Code = strings.Join(lines, "\n") + "\n"
			blocks = append(blocks, *cur)
			cur, prev = nil, ""
			continue
		}
		lines = append(lines, strings.TrimPrefix(line, indent))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: a ```go block is never closed", file, cur.Line-1)
	}
	return blocks, nil
}

// Source returns the Go file that compiles b in package pkg (a whole-file block keeps
// its own package clause). Its line directives point compiler errors at the markdown,
// whose path relative to the file's directory is mdPath.
func Source(b Block, pkg, mdPath string) ([]byte, error) {
	at := fmt.Sprintf("//line %s:%d\n", mdPath, b.Line)
	if startsWithPackage(b.Code) {
		return []byte(at + b.Code), nil
	}
	fset := token.NewFileSet()
	decls := "package " + pkg + "\n" + at + b.Code
	if f, err := parser.ParseFile(fset, "", decls, 0); err == nil && b.Assume == "" {
		return withImports(pkg, f, at+b.Code), nil
	}
	body := fmt.Sprintf("func block(%s) error {\n%s%s", b.Assume, at, b.Code)
	f, err := parser.ParseFile(fset, "", "package "+pkg+"\n"+body+"}\n", 0)
	if err != nil {
		return nil, fmt.Errorf("%s:%d: not Go declarations, nor statements: %v", b.File, b.Line, err)
	}
	var uses strings.Builder
	for _, name := range declared(f) {
		fmt.Fprintf(&uses, "_ = %s\n", name)
	}
	return withImports(pkg, f, body+"//line doccheck-generated:1\n"+uses.String()+"return nil\n}\n"), nil
}

func startsWithPackage(code string) bool {
	for line := range strings.Lines(code) {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "//") {
			continue
		}
		return strings.HasPrefix(t, "package ")
	}
	return false
}

// withImports writes the package clause, the imports of the names f leaves unresolved
// that Imports knows, then rest.
func withImports(pkg string, f *ast.File, rest string) []byte {
	var names []string // named, as a name may not be its path's last element (clocal)
	for _, id := range f.Unresolved {
		if _, ok := Imports[id.Name]; ok && !slices.Contains(names, id.Name) {
			names = append(names, id.Name)
		}
	}
	slices.Sort(names)
	var out bytes.Buffer
	fmt.Fprintf(&out, "package %s\n\n", pkg)
	for _, n := range names {
		if p := Imports[n]; path.Base(p) == n {
			fmt.Fprintf(&out, "import %q\n", p)
		} else {
			fmt.Fprintf(&out, "import %s %q\n", n, p)
		}
	}
	out.WriteString("\n" + rest)
	return out.Bytes()
}

// declared lists the variables the statements of f's one function declare at its top
// level, which the compiler would refuse as unused.
func declared(f *ast.File) []string {
	var names []string
	add := func(id *ast.Ident) {
		if id.Name != "_" && !slices.Contains(names, id.Name) {
			names = append(names, id.Name)
		}
	}
	fn := f.Decls[len(f.Decls)-1].(*ast.FuncDecl)
	for _, st := range fn.Body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					if id, ok := e.(*ast.Ident); ok {
						add(id)
					}
				}
			}
		case *ast.DeclStmt:
			if gd, ok := st.Decl.(*ast.GenDecl); ok && gd.Tok == token.VAR {
				for _, spec := range gd.Specs {
					for _, id := range spec.(*ast.ValueSpec).Names {
						add(id)
					}
				}
			}
		}
	}
	return names
}
