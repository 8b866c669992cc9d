package distributed_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// settling is a backend under TestSpendBound: a limiter and its Settler.
type settling interface {
	ratelimit.Limiter
	ratelimit.Settler
}

// TestSpendBound: 8 concurrent callers, each admitting a request for an estimate e = 5 and
// settling it to an actual a drawn from [0, 3e], round after round, the clock moving up to
// 20 ms between rounds. 100/s, Burst 50. What was spent (the actuals, counted at their
// admissions) in any window W is at most Burst + Rate·W + N·max(0, a − e): the overruns in
// flight, not yet charged, are the only excess, on the local backend and on Redis alike.
func TestSpendBound(t *testing.T) {
	client := newClient(t, redistest.NewServer(t).Addr())
	backends := map[string]func(clock *ratelimittest.Clock) settling{
		"local": func(clock *ratelimittest.Clock) settling {
			l := local.New(local.WithClock(clock.Now), local.WithCleanupInterval(0))
			t.Cleanup(func() { _ = l.Close() })
			return l
		},
		"redis": func(clock *ratelimittest.Clock) settling { return newLimiter(t, client, clock) },
	}
	const n, e, rounds = 8, 5, 150
	limit := ratelimit.Limit{Rate: 100, Burst: 50}
	for name, backend := range backends {
		t.Run(name, func(t *testing.T) {
			clock := ratelimittest.NewClock()
			l := backend(clock)
			ctx := context.Background()
			type spend struct {
				at     time.Time
				actual int
			}
			var mu sync.Mutex
			var spent []spend
			rng := rand.New(rand.NewPCG(40, 4))
			for range rounds {
				actuals := make([]int, n)
				for i := range actuals {
					actuals[i] = rng.IntN(3*e + 1)
				}
				now := clock.Now()
				var wg sync.WaitGroup
				for _, a := range actuals {
					wg.Go(func() {
						res, err := l.AllowN(ctx, "k", limit, e)
						if err != nil || !res.Allowed {
							return
						}
						mu.Lock()
						spent = append(spent, spend{now, a})
						mu.Unlock()
						// A refusal at the debt bound is not a lower spend: the work was done.
						_, _ = l.Settle(ctx, "k", limit, res.Charge, e, a)
					})
				}
				wg.Wait()
				clock.Advance(time.Duration(rng.IntN(21)) * time.Millisecond)
			}
			require.NotEmpty(t, spent)
			for _, w := range []time.Duration{0, 100 * time.Millisecond, time.Second} {
				bound := float64(limit.Burst) + limit.Rate*w.Seconds() + n*2*e
				for _, from := range spent {
					total := 0
					for _, s := range spent {
						if !s.at.Before(from.at) && s.at.Sub(from.at) <= w {
							total += s.actual
						}
					}
					require.LessOrEqual(t, float64(total), bound, "W = %v from %v", w, from.at)
				}
			}
		})
	}
}

// TestReserveThenSettle: a reserve-then-settle timeline of 10 requests a minute (a token every
// 6 s), in the manner of Limitador's Reserve/Commit and teleport's reserve-then-settle cases,
// in our own numbers, on both backends. A reservation here is the admission's charge (there
// is no outstanding count apart from the bucket: the estimate is taken at once, so nothing
// is admitted on a stale reading) and a commit is a settle, which may also charge an overrun;
// an uncommitted reservation refills at the Rate rather than coming back whole at a TTL.
func TestReserveThenSettle(t *testing.T) {
	client := newClient(t, redistest.NewServer(t).Addr())
	limit := ratelimit.PerMinute(10)
	for name, backend := range map[string]func(clock *ratelimittest.Clock) settling{
		"local": func(clock *ratelimittest.Clock) settling {
			l := local.New(local.WithClock(clock.Now), local.WithCleanupInterval(0))
			t.Cleanup(func() { _ = l.Close() })
			return l
		},
		"redis": func(clock *ratelimittest.Clock) settling { return newLimiter(t, client, clock) },
	} {
		t.Run(name, func(t *testing.T) {
			clock := ratelimittest.NewClock()
			l := backend(clock)
			ctx := context.Background()
			reserve := func(n int, want bool, retry time.Duration) ratelimit.Charge {
				t.Helper()
				res, err := l.AllowN(ctx, "k", limit, n)
				require.NoError(t, err)
				require.Equal(t, want, res.Allowed, "reserve %d", n)
				require.Equal(t, retry, res.RetryAfter, "reserve %d", n)
				return res.Charge
			}
			settle := func(c ratelimit.Charge, reserved, actual int) {
				t.Helper()
				_, err := l.Settle(ctx, "k", limit, c, reserved, actual)
				require.NoError(t, err)
			}
			a := reserve(3, true, 0)            // 7 left
			b := reserve(5, true, 0)            // 2 left
			reserve(3, false, 6*time.Second)    // 1 token short: 6 s
			settle(a, 3, 1)                     // 2 back: 4 left
			reserve(3, true, 0)                 // 1 left
			settle(b, 5, 7)                     // 2 more: 1 in debt
			reserve(1, false, 12*time.Second)   // 2 tokens short
			clock.Advance(12*time.Second - 1)   // a nanosecond early: still short
			reserve(1, false, time.Microsecond) // (the clocks count µs)
			clock.Advance(1)
			reserve(1, true, 0)
		})
	}
}
