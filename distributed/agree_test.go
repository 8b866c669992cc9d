package distributed_test

import (
	"testing"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestAgreesWithLocal plays the same random timelines on the local backend and on the
// scripts and requires identical Results, to the bit (see ratelimittest.Agree): the token
// bucket, with and without a warm-up, and the windows, whose counter's float arithmetic is
// inexact far from round numbers. The two do the same float64 operations on the same
// microsecond clock and search the same integers with the same tests.
func TestAgreesWithLocal(t *testing.T) {
	t.Parallel()
	client := newClient(t, redistest.NewServer(t).Addr())
	loc := ratelimittest.Harness{
		New: func(t testing.TB, c ratelimittest.Config) ratelimit.Limiter {
			l := local.New(local.WithClock(c.Clock.Now), local.WithAlgorithm(c.Algorithm), local.WithCleanupInterval(-1))
			t.Cleanup(func() { l.Close() })
			return l
		},
		Warmup:    true,
		Quotas:    true,
		KeepUsage: true,
	}
	ratelimittest.Agree(t, loc, redisHarness(client, noOptions))
}
