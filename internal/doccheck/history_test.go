package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The root module's sources describe the kit as it is: no comment sends the reader to a
// design document it does not have ("seed 000", "seeds 001 and 002"); it states the rule.
func TestNoDesignDocumentNamed(t *testing.T) {
	named := regexp.MustCompile(`(?i)\bseeds?[ /]+0\d\d`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil && path != root || d.Name() == ".git" {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		require.NoError(t, err)
		for i, line := range strings.Split(string(src), "\n") {
			assert.False(t, named.MatchString(line), "%s:%d: %s", path, i+1, strings.TrimSpace(line))
		}
		return nil
	})
	require.NoError(t, err)
}
