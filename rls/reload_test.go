package rls

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWatch moves synctest's clock through the polls of a Watcher: the tick at 1 s sees a
// new content, the one at 2 s sees it again and loads it.
func TestWatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "api.yaml")
		write := func(name string) {
			data, err := os.ReadFile(name)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(file, data, 0o600))
		}
		writeText := func(s string) { require.NoError(t, os.WriteFile(file, []byte(s), 0o600)) }
		write(apiConfig)
		s, err := New(newLocal(t, newClock()), load(t, dir))
		require.NoError(t, err)
		var loads, errs int
		w := Watch(s, dir, time.Second, func(*Config) { loads++ }, func(error) { errs++ })
		defer w.Close()
		has := func(kv ...string) bool {
			top, _ := s.Config().domain("api")
			return lookup(top, entries(kv...)).rule != nil
		}
		require.True(t, has("org", "x"))

		time.Sleep(500 * time.Millisecond)
		write(reloadedConfig)
		time.Sleep(time.Second) // 1.5 s: the tick at 1 s saw it once
		synctest.Wait()
		assert.True(t, has("org", "x"), "one read is not enough")
		time.Sleep(time.Second) // 2.5 s: the tick at 2 s saw the same bytes
		synctest.Wait()
		assert.False(t, has("org", "x"), "reloaded: org is gone")
		assert.Equal(t, 1, loads)

		// A content that changes at every read never loads.
		for i := range 4 {
			writeText("domain: api\n# revision " + string(rune('a'+i)) + "\n")
			time.Sleep(time.Second)
		}
		synctest.Wait()
		assert.Equal(t, 1, loads)
		assert.True(t, has("block", "x"))

		// A bad content changes nothing, and is reported once.
		writeText("domain: api\ndescriptors:\n  - key: k\n    ratelimit: {}\n")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		assert.Equal(t, 1, errs)
		assert.True(t, has("block", "x"), "the last good configuration stays")

		// Back to a good one.
		write(apiConfig)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, 2, loads)
		assert.True(t, has("org", "x"))
		w.Close()
		w.Close()
	})
}
