package doccheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// The README's first command runs the kit on a fresh clone with only Go, from the root,
// and shows a denial: no Redis, no Docker, no cd into a module of its own.
func TestReadmeRunsWithGoAlone(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?m)^go run (\\./examples/[a-z]+)").FindSubmatch(readme)
	require.NotNil(t, m, "the README names no `go run ./examples/...` to paste at the root")
	cmd := exec.Command("go", "run", string(m[1]))
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "DENIED", "the README's command shows no denial")
}
