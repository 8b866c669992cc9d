package pipeline_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// errorLog collects what an error handler is told.
type errorLog struct {
	mu   sync.Mutex
	errs []string
}

func (l *errorLog) add(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err.Error())
}

func (l *errorLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.errs...)
}

// A limit function that returns ratelimit.Unlimited exempts the request, without a word;
// one that returns the zero Limit (PerSecond(0): a setting never set) exempts it too, as
// before, but the error handler is told, once for the middleware, not once per request.
// WithLimit(Unlimited) is a choice the constructor accepts, and an Unlimited entry of
// WithLimits is skipped as the zero Limit is, never sent to the limiter (which refuses it).
func TestUnlimited(t *testing.T) {
	const zeroReport = "WithLimitFunc returned the zero Limit (a setting never set, such as PerSecond(0)): requests given it are not limited; return ratelimit.Unlimited if that is meant (reported once)"
	prefixes := map[string]string{"gin": "ginmw: ", "http": "httpmw: ", "grpc-unary": "grpcmw: ", "grpc-stream": "grpcmw: "}
	cases := []struct {
		name  string
		setup func(s *setup)
		runs  int      // requests sent
		kinds []string // the answer of each
		asked int      // keys the limiter was asked about
		errs  []string // what the error handler was told, without the middleware's prefix
	}{
		{"ZeroFromFunc", func(s *setup) { s.limitNow = func() ratelimit.Limit { return ratelimit.PerSecond(0) } },
			5, []string{"ok", "ok", "ok", "ok", "ok"}, 0, []string{zeroReport}},
		{"UnlimitedFromFunc", func(s *setup) { s.limitNow = func() ratelimit.Limit { return ratelimit.Unlimited } },
			5, []string{"ok", "ok", "ok", "ok", "ok"}, 0, nil},
		{"WithLimitUnlimited", func(s *setup) { s.limit = ratelimit.Unlimited },
			3, []string{"ok", "ok", "ok"}, 0, nil},
		{"UnlimitedEntry", func(s *setup) {
			s.limits = []ratelimit.Request{{Key: "a", Limit: ratelimit.Unlimited}, {Key: "b", Limit: ratelimit.PerHour(1)}}
		}, 2, []string{"ok", "denied"}, 1, nil},
	}
	for _, tc := range cases {
		for _, tg := range targets {
			t.Run(tc.name+"/"+tg.name, func(t *testing.T) {
				var log errorLog
				s := setup{errs: log.add}
				var l ratelimit.Limiter = &ratelimittest.Stub{Result: ratelimit.Result{Allowed: true}}
				if tc.name == "UnlimitedEntry" {
					// a real AllowAll: the entry of 1/h binds on the second request
					l = localLimiter(t)
				}
				s.limiter = l
				tc.setup(&s)
				do := tg.serve(t, s)
				for i := range tc.runs {
					got := do(context.Background())
					require.Equal(t, tc.kinds[i], got.kind, "request %d", i+1)
				}
				if stub, ok := l.(*ratelimittest.Stub); ok {
					assert.Len(t, stub.Keys(), tc.asked)
				}
				var want []string
				for _, e := range tc.errs {
					want = append(want, prefixes[tg.name]+e)
				}
				assert.Equal(t, want, log.all())
			})
		}
	}
}
