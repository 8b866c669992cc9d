package scriptsrc_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit/internal/scriptsrc"
)

// TestOfKeepsHash: asking for a script's text leaves its hash what Redis computes, so
// EVALSHA of it still finds the script on the server.
func TestOfKeepsHash(t *testing.T) {
	const src = "return redis.call('TIME')[1]"
	script := redis.NewScript(src)
	hash := script.Hash()
	for range 2 {
		if got := scriptsrc.Of(script); got != src {
			t.Fatalf("Of = %q, want %q", got, src)
		}
		if script.Hash() != hash {
			t.Fatalf("hash after Of = %q, want %q", script.Hash(), hash)
		}
	}
}
