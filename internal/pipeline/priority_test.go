package pipeline_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/internal/testhook"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// priorities records the priority of each decision an observer is told of.
type priorities struct {
	mu   sync.Mutex
	seen []priority.Level
}

func (p *priorities) ObserveDecision(_ context.Context, d observe.Decision) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, d.Priority)
}

func (p *priorities) all() []priority.Level {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]priority.Level(nil), p.seen...)
}

// WithPriorityFunc, through every middleware, on Redis: a bucket of 10 tokens refilling one
// an hour (nothing refills during the test) keeps 5 back from Sheddable requests and 1 from
// Normal ones. Five Sheddable requests pass, each told what is left to Sheddable; the sixth
// is denied, told to come back in the hour a sixth token takes; a Normal one still passes,
// told the 3 tokens left to Normal; Critical, the default, takes what is left. The observer
// is told each request's priority. The scripts read a clock that stands still, and the
// deadline is one no loaded machine misses.
func TestPriorityFunc(t *testing.T) {
	server := redistest.NewServer(t)
	client := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 10}
	sheddable, normal, critical := priority.Sheddable, priority.Normal, priority.Critical
	for i, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			l, err := distributed.New(client, distributed.WithPrefix(fmt.Sprintf("priority%d:", i)),
				distributed.WithTimeout(10*time.Second), testhook.DistributedClock(ratelimittest.NewClock().Now).(distributed.Option))
			require.NoError(t, err)
			var p atomic.Int32
			obs := &priorities{}
			do := tg.serve(t, setup{limiter: l, limit: limit, observer: obs, name: "api",
				priority: func() priority.Level { return priority.Level(p.Load()) }})
			ask := func(prio priority.Level) answer {
				t.Helper()
				p.Store(int32(prio))
				return do(context.Background())
			}
			ok := func(remaining, reset int) answer {
				return answer{kind: "ok", ran: true, fields: map[string]string{"x-ratelimit-limit": "10",
					"x-ratelimit-remaining": fmt.Sprint(remaining), "x-ratelimit-reset": fmt.Sprint(reset)}}
			}
			for k := range 5 {
				// k+1 tokens taken: full again in (k+1) hours.
				assert.Equal(t, ok(4-k, 3600*(k+1)), ask(sheddable), "sheddable %d", k)
			}
			assert.Equal(t, answer{kind: "denied", fields: map[string]string{"retry-after": "3600",
				"x-ratelimit-limit": "10", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "18000"}}, ask(sheddable))
			assert.Equal(t, ok(3, 6*3600), ask(normal))
			for k := range 4 {
				assert.Equal(t, ok(3-k, 3600*(7+k)), ask(critical), "critical %d", k)
			}
			assert.Equal(t, "denied", ask(critical).kind)
			assert.Equal(t, []priority.Level{sheddable, sheddable, sheddable, sheddable, sheddable, sheddable,
				normal, critical, critical, critical, critical, critical}, obs.all())
		})
	}
}

// Without WithPriorityFunc the limiter is asked at the priority the request's context
// carries: Critical, since nothing set one. With it, every decision is asked at its
// priority, the several of WithLimits included.
func TestPriorityReachesLimiter(t *testing.T) {
	allowed := ratelimit.Result{Allowed: true, Remaining: 1}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			l := &ratelimittest.Stub{Result: allowed}
			do := tg.serve(t, setup{limiter: l, limit: ratelimit.PerMinute(2)})
			do(context.Background())
			assert.Equal(t, []priority.Level{priority.Critical}, l.Priorities())

			l = &ratelimittest.Stub{Result: allowed}
			do = tg.serve(t, setup{limiter: l, limit: ratelimit.PerMinute(2),
				priority: func() priority.Level { return priority.Normal }})
			do(context.Background())
			assert.Equal(t, []priority.Level{priority.Normal}, l.Priorities())

			m := &ratelimittest.Multi{MultiResult: ratelimit.MultiResult{Allowed: true,
				Results: []ratelimit.Result{allowed, allowed}}}
			m.Result = allowed
			do = tg.serve(t, setup{limiter: m, limits: secondAndMinute,
				priority: func() priority.Level { return priority.Sheddable }})
			require.Equal(t, "ok", do(context.Background()).kind)
			assert.Equal(t, []priority.Level{priority.Sheddable, priority.Sheddable}, m.Priorities())
		})
	}
}
