package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	clocal "github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/otelmetrics"
	"github.com/sluice-go/ratelimit/otelmetrics/otelmetricstest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// The series of ratelimit.requests, as otelmetricstest.Attrs encodes them.
const (
	allowed       = "ratelimit.policy=login,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false"
	denied        = "ratelimit.policy=login,ratelimit.priority=critical,ratelimit.result=denied,ratelimit.shadow=false"
	deniedShadow  = "ratelimit.policy=login,ratelimit.priority=critical,ratelimit.result=denied,ratelimit.shadow=true"
	allowedShadow = "ratelimit.policy=login,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=true"
)

// The seed timeline through every middleware, observed with the real OpenTelemetry SDK:
// Rate 1/s, Burst 2, three requests at once: two allowed, one denied, three durations.
func TestObservedSeedTimeline(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			obs, reader := otelmetricstest.NewObserver(t, otelmetrics.WithDurationSample(1))
			do := tg.serve(t, setup{limiter: localLimiter(t), limit: ratelimit.Limit{Rate: 1, Burst: 2},
				observer: obs, name: "login"})
			for range 3 {
				do(context.Background())
			}
			got := otelmetricstest.Collect(t, reader)
			assert.Equal(t, map[string]int64{allowed: 2, denied: 1}, got.Counts(t, "ratelimit.requests"))
			var n uint64
			for attrs, p := range got.Histogram(t) {
				assert.Contains(t, attrs, "ratelimit.backend=local")
				n += p.Count
			}
			assert.Equal(t, uint64(3), n)
		})
	}
}

// Shadow mode: 1/s with a burst of 1, ten requests at once. All ten proceed, with no
// rate-limit header, and nine are reported denied in shadow; the same arrivals with the
// limit enforced deny exactly those nine.
func TestShadow(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			limit := ratelimit.Limit{Rate: 1, Burst: 1}
			l := localLimiter(t) // one limiter for both: shadow buckets are apart
			shadowObs, shadowReader := otelmetricstest.NewObserver(t, otelmetrics.WithDurationSample(1))
			shadow := tg.serve(t, setup{limiter: l, limit: limit, observer: shadowObs, name: "login", shadow: true})
			enforcedObs, enforcedReader := otelmetricstest.NewObserver(t, otelmetrics.WithDurationSample(1))
			enforced := tg.serve(t, setup{limiter: l, limit: limit, observer: enforcedObs, name: "login"})
			var shadowKinds, enforcedKinds []string
			for range 10 {
				a := shadow(context.Background())
				assert.True(t, a.ran)
				assert.Empty(t, a.fields, "no rate-limit header in shadow mode unless asked for")
				shadowKinds = append(shadowKinds, a.kind)
				enforcedKinds = append(enforcedKinds, enforced(context.Background()).kind)
			}
			assert.Equal(t, []string{"ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok", "ok"}, shadowKinds)
			assert.Equal(t, []string{"ok", "denied", "denied", "denied", "denied", "denied", "denied", "denied", "denied", "denied"},
				enforcedKinds, "the shadow limit took nothing from the enforced bucket")
			assert.Equal(t, map[string]int64{allowedShadow: 1, deniedShadow: 9},
				otelmetricstest.Collect(t, shadowReader).Counts(t, "ratelimit.requests"))
			assert.Equal(t, map[string]int64{allowed: 1, denied: 9},
				otelmetricstest.Collect(t, enforcedReader).Counts(t, "ratelimit.requests"))
		})
	}
}

// A limiter error is reported as an error of its kind; under fail closed the request is
// refused, and in shadow mode it proceeds.
func TestObservedErrors(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			obs, reader := otelmetricstest.NewObserver(t, otelmetrics.WithDurationSample(1))
			stub := &ratelimittest.Stub{Err: errDown}
			closed := tg.serve(t, setup{limiter: stub, limit: ratelimit.PerSecond(1), observer: obs, name: "login",
				closed: true})
			assert.Equal(t, "unavailable", closed(context.Background()).kind)
			shadow := tg.serve(t, setup{limiter: stub, limit: ratelimit.PerSecond(1), observer: obs, name: "login",
				closed: true, shadow: true})
			assert.Equal(t, "ok", shadow(context.Background()).kind)
			assert.Equal(t, map[string]int64{
				"error.type=unavailable,ratelimit.policy=login,ratelimit.priority=critical,ratelimit.result=error,ratelimit.shadow=false": 1,
				"error.type=unavailable,ratelimit.policy=login,ratelimit.priority=critical,ratelimit.result=error,ratelimit.shadow=true":  1,
			}, otelmetricstest.Collect(t, reader).Counts(t, "ratelimit.requests"))
		})
	}
}

// Redis down under fallback: the first failures are reported as errors of the primary
// decided by the secondary (backend "local"), the breaker's opening as a transition, and
// the decisions made while it is open as the secondary's.
func TestObservedOutage(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			obs, reader := otelmetricstest.NewObserver(t, otelmetrics.WithDurationSample(1))
			// The breaker's cooldown on a clock that stands still: however slow the machine,
			// no probe half-opens it during the test.
			clock := ratelimittest.NewClock()
			secondary := local.New(local.WithClock(clock.Now))
			t.Cleanup(func() { _ = secondary.Close() })
			l := fallback.New(&ratelimittest.Stub{Err: errDown}, secondary, fallback.WithStateHook(obs.ObserveBreaker),
				fallback.WithClock(clock.Now))
			do := tg.serve(t, setup{limiter: l, limit: ratelimit.PerMinute(100), observer: obs, name: "login"})
			for range 8 {
				require.Equal(t, "ok", do(context.Background()).kind)
			}
			got := otelmetricstest.Collect(t, reader)
			assert.Equal(t, map[string]int64{allowed: 8}, got.Counts(t, "ratelimit.requests"))
			assert.Equal(t, map[string]int64{"ratelimit.fallback.from=closed,ratelimit.fallback.to=open": 1},
				got.Counts(t, "ratelimit.fallback.transitions"))
			backends := map[string]uint64{}
			for attrs, p := range got.Histogram(t) {
				backends[attrs] += p.Count
			}
			assert.Equal(t, map[string]uint64{
				"ratelimit.backend=local,ratelimit.policy=login,ratelimit.result=allowed": 8,
			}, backends, "every decision came from the secondary")
		})
	}
}

// Without a secondary, the same outage shows as errors: the primary's failures, then the
// open breaker's refusals, all of kind unavailable; requests proceed under fail open.
func TestObservedOutageWithoutSecondary(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			obs, reader := otelmetricstest.NewObserver(t, otelmetrics.WithDurationSample(1))
			// No probe: see TestObservedOutage.
			l := fallback.New(&ratelimittest.Stub{Err: errDown}, nil, fallback.WithStateHook(obs.ObserveBreaker),
				fallback.WithClock(ratelimittest.NewClock().Now))
			do := tg.serve(t, setup{limiter: l, limit: ratelimit.PerMinute(100), observer: obs, name: "login"})
			for range 8 {
				require.Equal(t, "ok", do(context.Background()).kind)
			}
			got := otelmetricstest.Collect(t, reader)
			assert.Equal(t, map[string]int64{
				"error.type=unavailable,ratelimit.policy=login,ratelimit.priority=critical,ratelimit.result=error,ratelimit.shadow=false": 8,
			}, got.Counts(t, "ratelimit.requests"))
			assert.Equal(t, map[string]int64{"ratelimit.fallback.from=closed,ratelimit.fallback.to=open": 1},
				got.Counts(t, "ratelimit.fallback.transitions"))
		})
	}
}

// A shadow decision never holds the request more than pipeline.ShadowBudget: a limiter that
// never answers is given up on, the request proceeds, and after that failure shadow
// decisions pause (pipeline.ShadowPause), so that the next requests do not wait at all.
func TestShadowBudget(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			stub := &ratelimittest.Stub{Block: true}
			do := tg.serve(t, setup{limiter: stub, limit: ratelimit.PerMinute(1), shadow: true})
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			for range 3 {
				assert.Equal(t, "ok", do(ctx).kind)
			}
			assert.Len(t, stub.Keys(), 1, "asked once, then paused")
		})
	}
}

// sampled records, for each decision it is told of, whether it was a permit's and whether
// it carried a duration; it needs one duration in n (observe.DurationSampler).
type sampled struct {
	n    int
	mu   sync.Mutex
	seen []string // "rate" or "permit", with "-" when the decision was not timed
}

func (s *sampled) DurationSample() int { return s.n }

func (s *sampled) ObserveDecision(_ context.Context, d observe.Decision) {
	kind := "rate"
	if d.Concurrency {
		kind = "permit"
	}
	if d.Duration < 0 {
		kind = "-" + kind
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, kind)
}

func (s *sampled) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// The middlewares time one rate decision in n for an observer that needs one in n (here
// n = 4: the 1st, 5th and 9th of nine) and report the others with a negative duration;
// a concurrency limit's permit is always timed; joined with an observer that is not a
// DurationSampler, every decision is timed, for both. Through otelmetrics as built by
// default (one in 16), the histogram has 2 of 20 decisions, the 1st and the 17th.
func TestObservedDurationSample(t *testing.T) {
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			serve := func(o observe.Observer) func(context.Context) answer {
				conc := clocal.New(clocal.WithQueue(-1, clocal.OldestFirst))
				t.Cleanup(func() { _ = conc.Close() })
				return tg.serve(t, setup{limiter: localLimiter(t), limit: ratelimit.PerMinute(100), observer: o,
					name: "login", conc: conc, inFlight: 1})
			}
			s4 := &sampled{n: 4}
			do := serve(s4)
			for range 9 {
				require.Equal(t, "ok", do(context.Background()).kind)
			}
			assert.Equal(t, []string{"rate", "permit", "-rate", "permit", "-rate", "permit", "-rate", "permit",
				"rate", "permit", "-rate", "permit", "-rate", "permit", "-rate", "permit", "rate", "permit"}, s4.all())

			s16, every := &sampled{n: 16}, &sampled{n: 1}
			do = serve(observe.Join(s16, &priorities{}))
			for range 3 {
				require.Equal(t, "ok", do(context.Background()).kind)
			}
			assert.Equal(t, []string{"rate", "permit", "rate", "permit", "rate", "permit"}, s16.all())
			do = serve(every)
			require.Equal(t, "ok", do(context.Background()).kind)
			assert.Equal(t, []string{"rate", "permit"}, every.all())

			obs, reader := otelmetricstest.NewObserver(t)
			do = tg.serve(t, setup{limiter: localLimiter(t), limit: ratelimit.PerMinute(100), observer: obs, name: "login"})
			for range 20 {
				require.Equal(t, "ok", do(context.Background()).kind)
			}
			got := otelmetricstest.Collect(t, reader)
			assert.Equal(t, map[string]int64{allowed: 20}, got.Counts(t, "ratelimit.requests"))
			assert.Equal(t, uint64(2), got.Histogram(t)["ratelimit.backend=local,ratelimit.policy=login,ratelimit.result=allowed"].Count)
		})
	}
}
