package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	m.Run()
}

// localLimiter returns a local limiter on a clock that never moves.
func localLimiter(t *testing.T) ratelimit.Limiter {
	l := local.New(local.WithClock(ratelimittest.NewClock().Now))
	t.Cleanup(func() { _ = l.Close() })
	return l
}

var errDown = errors.New("redis: connection refused")

// One behaviour table, run against every middleware: Gin, net/http, gRPC unary and
// stream. Each case sends requests one after the other and checks the last one's answer.
func TestBehaviour(t *testing.T) {
	none := map[string]string{}
	cases := []struct {
		name     string
		setup    func(t *testing.T) setup
		requests int
		want     answer
		asked    int // how many times the limiter was asked, when it is a stub; -1: not checked
	}{{
		// PerMinute(2): 2 tokens, one every 30 s. After the first request 1 remains and the
		// bucket is full again in 30 s.
		name:     "allowed",
		setup:    func(t *testing.T) setup { return setup{limiter: localLimiter(t), limit: ratelimit.PerMinute(2)} },
		requests: 1,
		want: answer{kind: "ok", ran: true, fields: map[string]string{
			"x-ratelimit-limit": "2", "x-ratelimit-remaining": "1", "x-ratelimit-reset": "30"}},
		asked: -1,
	}, {
		// The third request of PerMinute(2) at one instant waits 30 s for a token; the
		// bucket is full 60 s later.
		name:     "denied",
		setup:    func(t *testing.T) setup { return setup{limiter: localLimiter(t), limit: ratelimit.PerMinute(2)} },
		requests: 3,
		want: answer{kind: "denied", fields: map[string]string{"retry-after": "30",
			"x-ratelimit-limit": "2", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "60"}},
		asked: -1,
	}, {
		// Requests without a key share one bucket: the second of PerMinute(1) is denied.
		name: "unkeyed requests share a bucket",
		setup: func(t *testing.T) setup {
			return setup{limiter: localLimiter(t), limit: ratelimit.PerMinute(1), keyFails: true}
		},
		requests: 2,
		want: answer{kind: "denied", fields: map[string]string{"retry-after": "60",
			"x-ratelimit-limit": "1", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "60"}},
		asked: -1,
	}, {
		name: "limiter error, fail open",
		setup: func(t *testing.T) setup {
			return setup{limiter: &ratelimittest.Stub{Err: errDown}, limit: ratelimit.PerMinute(1)}
		},
		requests: 1,
		want:     answer{kind: "ok", ran: true, fields: none},
		asked:    1,
	}, {
		name: "limiter error, fail closed",
		setup: func(t *testing.T) setup {
			return setup{limiter: &ratelimittest.Stub{Err: errDown}, limit: ratelimit.PerMinute(1), closed: true}
		},
		requests: 1,
		want:     answer{kind: "unavailable", fields: none},
		asked:    1,
	}, {
		// A cost above Burst can never be allowed: refused, not failed open.
		name: "cost exceeds burst",
		setup: func(t *testing.T) setup {
			return setup{limiter: localLimiter(t), limit: ratelimit.PerMinute(2), cost: func() int { return 3 }}
		},
		requests: 1,
		want:     answer{kind: "too-costly", fields: none},
		asked:    -1,
	}, {
		// A cost of 0 is a mistake in the program: refused whatever the policy.
		name: "invalid cost, fail open",
		setup: func(t *testing.T) setup {
			return setup{limiter: localLimiter(t), limit: ratelimit.PerMinute(2), cost: func() int { return 0 }}
		},
		requests: 1,
		want:     answer{kind: "invalid", fields: none},
		asked:    -1,
	}, {
		// So is a limit the backend rejects, found only at request time.
		name: "invalid limit from a limit function, fail open",
		setup: func(t *testing.T) setup {
			return setup{limiter: localLimiter(t), limit: ratelimit.Limit{Rate: 1}, limitFn: true}
		},
		requests: 1,
		want:     answer{kind: "invalid", fields: none},
		asked:    -1,
	}, {
		// The zero Limit from a limit function: this request is not limited.
		name: "zero limit",
		setup: func(t *testing.T) setup {
			return setup{limiter: &ratelimittest.Stub{}, limit: ratelimit.Limit{}, limitFn: true}
		},
		requests: 1,
		want:     answer{kind: "ok", ran: true, fields: none},
		asked:    0,
	}, {
		name: "skip",
		setup: func(t *testing.T) setup {
			return setup{limiter: &ratelimittest.Stub{}, limit: ratelimit.PerMinute(1), skip: true}
		},
		requests: 1,
		want:     answer{kind: "ok", ran: true, fields: none},
		asked:    0,
	}}
	for _, tt := range cases {
		for _, tg := range targets {
			t.Run(tt.name+"/"+tg.name, func(t *testing.T) {
				s := tt.setup(t)
				do := tg.serve(t, s)
				var got answer
				for range tt.requests {
					got = do(context.Background())
				}
				assert.Equal(t, tt.want, got)
				if stub, ok := s.limiter.(*ratelimittest.Stub); ok && tt.asked >= 0 {
					assert.Len(t, stub.Keys(), tt.asked)
				}
			})
		}
	}
}

// A shaper's Delay is served before the handler runs.
func TestDelayHonoured(t *testing.T) {
	const delay = 20 * time.Millisecond
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			stub := &ratelimittest.Stub{Result: ratelimit.Result{Allowed: true, Remaining: 1, Delay: delay}}
			do := tg.serve(t, setup{limiter: stub, limit: ratelimit.PerSecond(2)})
			start := time.Now()
			got := do(context.Background())
			assert.GreaterOrEqual(t, time.Since(start), delay)
			assert.Equal(t, "ok", got.kind)
			assert.True(t, got.ran)
		})
	}
}

// A request whose client leaves is ended, never run: while it is held for a shaper's Delay,
// and while the limiter is still deciding, even under fail open (the limiter's error is
// then the client's own, and says nothing of the limiter's health).
func TestClientLeaves(t *testing.T) {
	cases := []struct {
		name string
		stub func(entered chan struct{}) *ratelimittest.Stub
	}{
		{"during the delay", func(entered chan struct{}) *ratelimittest.Stub {
			return &ratelimittest.Stub{Result: ratelimit.Result{Allowed: true, Remaining: 1, Delay: time.Hour}, Entered: entered}
		}},
		{"while the limiter decides", func(entered chan struct{}) *ratelimittest.Stub {
			return &ratelimittest.Stub{Block: true, Entered: entered}
		}},
	}
	for _, tt := range cases {
		for _, tg := range targets {
			t.Run(tt.name+"/"+tg.name, func(t *testing.T) {
				entered := make(chan struct{}, 1)
				do := tg.serve(t, setup{limiter: tt.stub(entered), limit: ratelimit.PerSecond(2)})
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					<-entered
					cancel()
				}()
				got := do(ctx)
				require.Equal(t, "ended", got.kind)
				assert.False(t, got.ran)
			})
		}
	}
}
