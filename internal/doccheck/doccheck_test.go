package doccheck

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the module's root directory, two levels above this package.
const root = "../.."

// markdown lists the files whose Go blocks must compile.
func markdown(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

// build writes each block into a package of its own under testdata (inside the module,
// so that the module's packages and its dependencies resolve; testdata keeps the
// directory out of ./... for anyone else) and compiles them all with one go build.
func build(t *testing.T, blocks []Block) (string, error) {
	t.Helper()
	tmp, err := os.MkdirTemp("testdata", "blocks-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	var pkgs []string
	for i, b := range blocks {
		pkg := fmt.Sprintf("b%03d", i)
		abs, err := filepath.Abs(b.File)
		require.NoError(t, err)
		src, err := Source(b, pkg, abs)
		if err != nil {
			t.Error(err)
			continue
		}
		dir := filepath.Join(tmp, pkg)
		require.NoError(t, os.Mkdir(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "block.go"), src, 0o644))
		pkgs = append(pkgs, "./"+filepath.ToSlash(dir))
	}
	cmd := exec.Command("go", append([]string{"build"}, pkgs...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestBlocksCompile compiles every Go block of README.md and docs/*.md.
func TestBlocksCompile(t *testing.T) {
	var blocks []Block
	for _, file := range markdown(t) {
		content, err := os.ReadFile(file)
		require.NoError(t, err)
		bs, err := Extract(file, content)
		require.NoError(t, err)
		blocks = append(blocks, bs...)
	}
	require.NotEmpty(t, blocks, "no Go blocks found: is the root right?")
	out, err := build(t, blocks)
	require.NoError(t, err, "a Go block of the docs does not compile:\n%s", out)
}

// TestBrokenBlockFails: a block that does not compile fails the build, and the error
// names the markdown file and line.
func TestBrokenBlockFails(t *testing.T) {
	blocks, err := Extract("broken.md", []byte("text\n\n```go\nn := 1\nn = \"one\"\n```\n"))
	require.NoError(t, err)
	require.Len(t, blocks, 1)
	out, err := build(t, blocks)
	require.Error(t, err)
	assert.Contains(t, out, "broken.md:5", "the error points at the block's second line (line 5)")
}

func TestExtract(t *testing.T) {
	md := "# T\n\n<!-- assume: ctx context.Context -->\n```go\nx(ctx)\n```\n\n" +
		"- a list\n\n  ```go\n  y()\n  ```\n```sh\nmake test\n```\n"
	blocks, err := Extract("t.md", []byte(md))
	require.NoError(t, err)
	assert.Equal(t, []Block{
		{File: "t.md", Line: 5, Code: "x(ctx)\n", Assume: "ctx context.Context"},
		{File: "t.md", Line: 11, Code: "y()\n"}, // indentation removed, no assume
	}, blocks)

	_, err = Extract("t.md", []byte("```go\nx()\n"))
	assert.ErrorContains(t, err, "t.md:1")
}

func TestSource(t *testing.T) {
	t.Run("statements", func(t *testing.T) {
		src, err := Source(Block{File: "t.md", Line: 7, Code: "limiter := local.New()\nres, _ := limiter.Allow(ctx, \"k\", ratelimit.PerSecond(1))\n",
			Assume: "ctx context.Context"}, "b1", "t.md")
		require.NoError(t, err)
		s := string(src)
		for _, want := range []string{
			"package b1\n",
			`import "context"`, `import "github.com/sluice-go/ratelimit"`, `import "github.com/sluice-go/ratelimit/local"`,
			"func block(ctx context.Context) error {\n//line t.md:7\nlimiter := local.New()",
			"_ = limiter\n_ = res\nreturn nil\n}",
		} {
			assert.Contains(t, s, want)
		}
	})
	t.Run("declarations", func(t *testing.T) {
		src, err := Source(Block{File: "t.md", Line: 3, Code: "type L interface {\n\tAllow(ctx context.Context) error\n}\n"}, "b2", "t.md")
		require.NoError(t, err)
		assert.Equal(t, "package b2\n\nimport \"context\"\n\n//line t.md:3\ntype L interface {\n\tAllow(ctx context.Context) error\n}\n", string(src))
	})
	t.Run("whole file", func(t *testing.T) {
		code := "// A program.\npackage main\n\nfunc main() {}\n"
		src, err := Source(Block{File: "t.md", Line: 3, Code: code}, "b3", "t.md")
		require.NoError(t, err)
		assert.Equal(t, "//line t.md:3\n"+code, string(src))
	})
	t.Run("neither", func(t *testing.T) {
		_, err := Source(Block{File: "t.md", Line: 9, Code: "if {\n"}, "b4", "t.md")
		assert.ErrorContains(t, err, "t.md:9")
	})
}
