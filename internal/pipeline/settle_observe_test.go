package pipeline_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
)

// recorder is an Observer that keeps every Decision it is told of, in order, without its
// Duration and Err (compared apart, being of no fixed value).
type recorder struct {
	mu   sync.Mutex
	got  []observe.Decision
	errs []error
}

func (r *recorder) ObserveDecision(_ context.Context, d observe.Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, d.Err)
	d.Duration, d.Err = 0, nil
	r.got = append(r.got, d)
}

// redisLimiter is a Redis limiter on server, its keys apart from other tests'.
func redisLimiter(t *testing.T, server *redistest.Server) ratelimit.Limiter {
	client := redis.NewClient(&redis.Options{Addr: server.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	l, err := distributed.New(client, distributed.WithPrefix(fmt.Sprintf("%s:", t.Name())), distributed.WithTimeout(time.Minute))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// TestSettleObserved: the middlewares report each settle (WithSettle) to their observer
// (WithObserver), after the request's decision, on every framework, locally and on Redis
// (where the estimate is held: Hold), and through fallback, whose holds are reported with
// the part that decided (Redis). A token an hour, Burst 100, estimates of 10, at
// priority Normal, whose Remaining leaves out the 10 tokens kept back for Critical. The
// first request costs 30: decided with 90 in the bucket (80 to Normal), settled with 70, a
// peek for one leaving 59. The second costs 300: decided with 60 in the bucket, its overrun
// of 290 would put the bucket 230 in debt, more than Burst, and is refused: reported as an
// error, the estimate kept charged (the third, which settles nothing, is decided with 50 in
// the bucket: 40).
func TestSettleObserved(t *testing.T) {
	server := redistest.NewServer(t)
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 100}
	backends := []struct {
		name    string
		new     func(t *testing.T) ratelimit.Limiter
		settler string // the backend settles are reported under: the limiter's own name
	}{
		{"local", localLimiter, "local"},
		{"distributed", func(t *testing.T) ratelimit.Limiter { return redisLimiter(t, server) }, "distributed"},
		// The holds say which part decided (observe.HoldOriginReporter); settles do not.
		{"distributed", func(t *testing.T) ratelimit.Limiter {
			return fallback.New(redisLimiter(t, server), localLimiter(t))
		}, "fallback"},
	}
	for _, b := range backends {
		for _, tg := range targets {
			t.Run(b.settler+"/"+tg.name, func(t *testing.T) {
				rec := &recorder{}
				actuals := []int{30, 300}
				var mu sync.Mutex
				var errs []error
				do := tg.serve(t, setup{limiter: b.new(t), limit: limit, observer: rec, name: "llm",
					cost:     func() int { return 10 },
					priority: func() priority.Level { return priority.Normal },
					settle: func() (int, bool) {
						if len(actuals) == 0 {
							return 0, false
						}
						a := actuals[0]
						actuals = actuals[1:]
						return a, true
					},
					errs: func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() },
				})
				for range 3 {
					require.Equal(t, "ok", do(context.Background()).kind)
				}
				base := observe.Decision{Policy: "llm", Backend: b.name, Priority: priority.Normal, Limit: limit, Cost: 10}
				decided := func(remaining int) observe.Decision {
					d := base
					d.Outcome, d.Remaining = observe.OutcomeAllowed, remaining
					return d
				}
				settled := func(actual, remaining int, outcome observe.Outcome) observe.Decision {
					d := base
					d.Backend = b.settler
					d.Settle, d.Actual, d.Outcome, d.Remaining = true, actual, outcome, remaining
					if outcome == observe.OutcomeError {
						d.ErrorKind = observe.KindInvalidInput
					}
					return d
				}
				rec.mu.Lock()
				defer rec.mu.Unlock()
				require.Equal(t, []observe.Decision{
					decided(80), settled(30, 59, observe.OutcomeAllowed),
					decided(50), settled(300, 0, observe.OutcomeError),
					decided(40),
				}, rec.got)
				require.ErrorIs(t, rec.errs[3], ratelimit.ErrExceedsBurst)
				mu.Lock()
				defer mu.Unlock()
				require.Len(t, errs, 1)
				require.ErrorIs(t, errs[0], ratelimit.ErrExceedsBurst)
			})
		}
	}
}
