package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/bucket"
	"github.com/sluice-go/ratelimit/local"
)

// TestKeyParts: a middleware's default key given in parts (Options.KeyParts) makes the
// bucket key and the key bucket.Name and the key function make, with one allocation instead
// of two; parts that are refused, a key function of the user's, and a key too long for
// the limiter take the key function's path, which reports what it must.
func TestKeyParts(t *testing.T) {
	l := local.New()
	t.Cleanup(func() { _ = l.Close() })
	// A request is the text of its client's address; "noparts" has no parts.
	key := func(r string) (string, error) { return "ip:" + r, nil }
	parts := func(r string) (string, string, bool) { return "ip:", r, r != "noparts" }
	long := strings.Repeat("1", args.MaxKeyLen)
	tests := []struct {
		name       string
		r          string
		shadow     bool
		userKey    bool // WithKeyFunc: "user:" + r
		wantBucket string
		wantKey    string
		wantAllocs float64
		wantErr    error // reported to the error handler
	}{
		{"parts", "192.0.2.1", false, false, "default|ip:192.0.2.1", "ip:192.0.2.1", 1, nil},
		{"parts, shadow", "192.0.2.1", true, false, "default#shadow|ip:192.0.2.1", "ip:192.0.2.1", 1, nil},
		{"no parts", "noparts", false, false, "default|ip:noparts", "ip:noparts", 2, nil},
		{"the user's key", "192.0.2.1", false, true, "default|user:192.0.2.1", "user:192.0.2.1", 2, nil},
		{"too long", long, false, false, "default|" + UnkeyedKey, UnkeyedKey, -1, ratelimit.ErrInvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Defaults(key)
			o.KeyParts = parts
			o.Limit = func(string) (ratelimit.Limit, string) { return ratelimit.PerSecond(10), "" }
			o.Shadow = tt.shadow
			if tt.userKey {
				o.SetKey("WithKeyFunc", func(r string) (string, error) { return "user:" + r, nil }, key)
			}
			var reported error
			p, err := New("test: ", l, &o, func(_ string, err error) error { reported = err; return nil })
			require.NoError(t, err)

			var d Decision
			_, _, ok := p.prepare(context.Background(), tt.r, &d)
			require.True(t, ok)
			assert.Equal(t, tt.wantBucket, d.bucket)
			assert.Equal(t, tt.wantKey, d.Key)
			if tt.wantErr != nil {
				assert.True(t, errors.Is(reported, tt.wantErr), "reported %v", reported)
			} else {
				assert.NoError(t, reported)
				assert.Equal(t, bucket.Name{Policy: d.Policy, Shadow: tt.shadow}.Key(d.Key), d.bucket)
			}
			if tt.wantAllocs >= 0 {
				assert.Equal(t, tt.wantAllocs, testing.AllocsPerRun(100, func() { p.prepare(context.Background(), tt.r, &Decision{}) }))
			}
		})
	}
}
