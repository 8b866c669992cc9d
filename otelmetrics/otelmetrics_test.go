package otelmetrics_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/otelmetrics"
	"github.com/sluice-go/ratelimit/otelmetrics/otelmetricstest"
	"github.com/sluice-go/ratelimit/priority"
)

var (
	collect = otelmetricstest.Collect
	attrs   = otelmetricstest.Attrs
)

// newObserver returns an Observer that records every decision in the histogram, so that
// the tests read each one there; TestDurationSample tests the sample.
func newObserver(t testing.TB, opts ...otelmetrics.Option) (*otelmetrics.Observer, *sdkmetric.ManualReader) {
	t.Helper()
	return otelmetricstest.NewObserver(t, append([]otelmetrics.Option{otelmetrics.WithDurationSample(1)}, opts...)...)
}

// seedClock is the seed timeline's clock: t0 + at, moved by the test.
type seedClock struct{ now time.Time }

func (c *seedClock) Now() time.Time { return c.now }

// TestSeedTimeline: Rate 1/s, Burst 2, three requests at once: two allowed, one denied.
func TestSeedTimeline(t *testing.T) {
	obs, reader := newObserver(t)
	clock := &seedClock{time.Date(2026, 1, 1, 0, 0, 0, 100e6, time.UTC)}
	l := local.New(local.WithClock(clock.Now), local.WithCleanupInterval(0))
	defer l.Close()
	limiter := observe.Wrap(l, obs, "api")
	for range 3 {
		_, err := limiter.Allow(context.Background(), "client", ratelimit.Limit{Rate: 1, Burst: 2})
		require.NoError(t, err)
	}

	c := collect(t, reader)
	assert.Equal(t, map[string]int64{
		"ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false": 2,
		"ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=denied,ratelimit.shadow=false":  1,
	}, c.Counts(t, "ratelimit.requests"))
	assert.Equal(t, "{request}", c["ratelimit.requests"].Unit)

	h := c.Histogram(t)
	require.Len(t, h, 2)
	allowed := h["ratelimit.backend=local,ratelimit.policy=api,ratelimit.result=allowed"]
	denied := h["ratelimit.backend=local,ratelimit.policy=api,ratelimit.result=denied"]
	assert.Equal(t, uint64(3), allowed.Count+denied.Count)
	assert.Equal(t, uint64(2), allowed.Count)
	assert.Equal(t, []float64{1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 0.01, 0.025, 0.05, 0.1, 0.25},
		allowed.Bounds)
	assert.Equal(t, "s", c["ratelimit.decision.duration"].Unit)
}

// TestErrorsAndShadow: each error kind is its own error.type, shadow decisions their own
// series, and a denial-cache hit counts both as a denial and as a hit.
func TestErrorsAndShadow(t *testing.T) {
	obs, reader := newObserver(t)
	ctx := context.Background()
	for _, d := range []observe.Decision{
		{Policy: "api", Backend: "distributed", Outcome: observe.OutcomeError, ErrorKind: observe.KindTimeout, Duration: 50 * time.Millisecond},
		{Policy: "api", Backend: "distributed", Outcome: observe.OutcomeError, ErrorKind: observe.KindTimeout, Duration: 50 * time.Millisecond},
		{Policy: "api", Backend: "distributed", Outcome: observe.OutcomeError, ErrorKind: observe.KindUnavailable},
		{Policy: "api", Backend: "local", Outcome: observe.OutcomeError, ErrorKind: observe.KindInvalidInput},
		{Policy: "api", Backend: "local", Outcome: observe.OutcomeError, ErrorKind: observe.KindCanceled},
		{Policy: "api", Backend: "local", Outcome: observe.OutcomeError, ErrorKind: observe.KindClosed},
		{Policy: "api", Backend: "local", Outcome: observe.OutcomeError, ErrorKind: observe.KindNone},
		{Policy: "api", Backend: "local", Outcome: observe.OutcomeError, ErrorKind: 200},
		{Policy: "new", Backend: "local", Outcome: observe.OutcomeDenied, Shadow: true},
		{Policy: "new", Backend: "local", Outcome: observe.OutcomeAllowed, Shadow: true},
		{Policy: "new", Backend: "local", Outcome: observe.OutcomeError, ErrorKind: observe.KindTimeout, Shadow: true},
		{Policy: "api", Backend: "fallback", Outcome: observe.OutcomeDenied, Cached: true},
	} {
		obs.ObserveDecision(ctx, d)
	}
	c := collect(t, reader)
	assert.Equal(t, map[string]int64{
		"error.type=timeout,ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=error,ratelimit.shadow=false":       2,
		"error.type=unavailable,ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=error,ratelimit.shadow=false":   1,
		"error.type=invalid_input,ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=error,ratelimit.shadow=false": 1,
		"error.type=canceled,ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=error,ratelimit.shadow=false":      1,
		"error.type=closed,ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=error,ratelimit.shadow=false":        1,
		"error.type=_OTHER,ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=error,ratelimit.shadow=false":        2,
		"ratelimit.policy=new,ratelimit.priority=critical,ratelimit.result=denied,ratelimit.shadow=true":                          1,
		"ratelimit.policy=new,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=true":                         1,
		"error.type=timeout,ratelimit.policy=new,ratelimit.priority=critical,ratelimit.result=error,ratelimit.shadow=true":        1,
		"ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=denied,ratelimit.shadow=false":                         1,
	}, c.Counts(t, "ratelimit.requests"))
	assert.Equal(t, map[string]int64{"ratelimit.policy=api": 1}, c.Counts(t, "ratelimit.denial_cache.hits"))

	h := c.Histogram(t)
	redis := h["ratelimit.backend=distributed,ratelimit.policy=api,ratelimit.result=error"]
	assert.Equal(t, uint64(3), redis.Count)
	assert.InDelta(t, 0.1, redis.Sum, 1e-12)
	// 0 s, and 50 ms twice: the buckets (…, 0.025], (0.025, 0.05] count 50 ms (le 0.05).
	assert.Equal(t, []uint64{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0}, redis.BucketCounts)
	assert.Equal(t, uint64(5), h["ratelimit.backend=local,ratelimit.policy=api,ratelimit.result=error"].Count)
}

// failing is a primary that cannot decide, as a Redis backend when Redis is down.
type failing struct{ ratelimit.Limiter }

var errDown = errors.New("ratelimit: redis: connection refused")

func (failing) AllowN(_ context.Context, _ string, limit ratelimit.Limit, _ int) (ratelimit.Result, error) {
	return ratelimit.Result{Limit: limit}, errDown
}

// TestFallbackOutage: the primary fails; the first call and the next go to the local
// secondary, the breaker opens once; the decisions are counted under backend local.
func TestFallbackOutage(t *testing.T) {
	obs, reader := newObserver(t, otelmetrics.WithBuckets("local", nil))
	secondary := local.New(local.WithCleanupInterval(0))
	defer secondary.Close()
	fb := fallback.New(failing{}, secondary, fallback.WithFailureThreshold(1), fallback.WithCooldown(time.Hour),
		fallback.WithStateHook(obs.ObserveBreaker))
	limiter := observe.Wrap(fb, obs, "api")
	for range 3 {
		_, err := limiter.Allow(context.Background(), "k", ratelimit.Limit{Rate: 1, Burst: 2})
		require.NoError(t, err)
	}
	c := collect(t, reader)
	assert.Equal(t, map[string]int64{
		"ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false": 2,
		"ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=denied,ratelimit.shadow=false":  1,
	}, c.Counts(t, "ratelimit.requests"))
	h := c.Histogram(t)
	assert.Equal(t, uint64(2), h["ratelimit.backend=local,ratelimit.policy=api,ratelimit.result=allowed"].Count)
	assert.Equal(t, uint64(1), h["ratelimit.backend=local,ratelimit.policy=api,ratelimit.result=denied"].Count)
	assert.Equal(t, map[string]int64{"ratelimit.fallback.from=closed,ratelimit.fallback.to=open": 1},
		c.Counts(t, "ratelimit.fallback.transitions"))
	assert.NotContains(t, c, "ratelimit.buckets", "a nil count adds nothing")

	obs.ObserveBreaker(fallback.StateChange{From: fallback.Open, To: fallback.HalfOpen})
	obs.ObserveBreaker(fallback.StateChange{From: fallback.State(7), To: fallback.Closed})
	assert.Equal(t, map[string]int64{
		"ratelimit.fallback.from=closed,ratelimit.fallback.to=open":     1,
		"ratelimit.fallback.from=open,ratelimit.fallback.to=half-open":  1,
		"ratelimit.fallback.from=State(7),ratelimit.fallback.to=closed": 1,
	}, collect(t, reader).Counts(t, "ratelimit.fallback.transitions"))
}

func TestBuckets(t *testing.T) {
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	obs, reader := newObserver(t, otelmetrics.WithBuckets("local", l.Len))
	limiter := observe.Wrap(l, obs, "api")
	for i := range 3 {
		_, err := limiter.Allow(context.Background(), "k"+strconv.Itoa(i), ratelimit.PerSecond(1))
		require.NoError(t, err)
	}
	c := collect(t, reader)
	assert.Equal(t, map[string]int64{"ratelimit.backend=local": 3}, c.Counts(t, "ratelimit.buckets"))
	assert.False(t, c["ratelimit.buckets"].Data.(metricdata.Sum[int64]).IsMonotonic)
}

// shadowed marks every decision it forwards as a shadow one.
type shadowed struct{ observe.Observer }

func (s shadowed) ObserveDecision(ctx context.Context, d observe.Decision) {
	d.Shadow = true
	s.Observer.ObserveDecision(ctx, d)
}

// TestCardinality: 100,000 distinct keys under two policies, enforced and in shadow, each
// key allowed once and denied once, make at most policies × results × shadow series of
// ratelimit.requests, and no attribute value of any instrument is a key.
func TestCardinality(t *testing.T) {
	const keys = 100_000
	obs, reader := newObserver(t)
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	limiters := []ratelimit.Limiter{
		observe.Wrap(l, obs, "api"), observe.Wrap(l, obs, "login"),
		observe.Wrap(l, shadowed{obs}, "api"), observe.Wrap(l, shadowed{obs}, "login"),
	}
	limit := ratelimit.Limit{Rate: 1e-6, Burst: 1}
	ctx := context.Background()
	seen := make(map[string]bool, keys)
	for i := range keys {
		key := "10.0." + strconv.Itoa(i/256) + "." + strconv.Itoa(i%256)
		seen[key] = true
		lim := limiters[i%len(limiters)]
		for range 2 {
			_, err := lim.Allow(ctx, key, limit)
			require.NoError(t, err)
		}
	}
	require.Len(t, seen, keys)

	c := collect(t, reader)
	requests := c.Counts(t, "ratelimit.requests")
	const policies, priorities, results, shadow = 2, 3, 3, 2
	assert.LessOrEqual(t, len(requests), policies*priorities*results*shadow)
	assert.Len(t, requests, 8) // allowed and denied, per policy, enforced and in shadow
	for set, n := range requests {
		assert.Equal(t, int64(keys/4), n, set)
	}
	var values int
	for name, m := range c {
		var sets []attribute.Set
		switch data := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range data.DataPoints {
				sets = append(sets, p.Attributes)
			}
		case metricdata.Histogram[float64]:
			for _, p := range data.DataPoints {
				sets = append(sets, p.Attributes)
			}
		default:
			t.Fatalf("%s: unexpected %T", name, data)
		}
		for _, s := range sets {
			for _, kv := range s.ToSlice() {
				values++
				assert.False(t, seen[kv.Value.Emit()], "%s: attribute %s holds a key", name, kv.Key)
			}
		}
	}
	assert.Equal(t, 8*4+4*3, values) // requests: 8 series × 4; duration: 4 series × 3
}

// TestPolicyOverBackends: a policy decided by two backends is one series of requests, and
// two of durations.
func TestPolicyOverBackends(t *testing.T) {
	obs, reader := newObserver(t)
	for _, backend := range []string{"distributed", "local", "distributed"} {
		obs.ObserveDecision(context.Background(), observe.Decision{Policy: "api", Backend: backend})
	}
	c := collect(t, reader)
	assert.Equal(t, map[string]int64{"ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false": 3},
		c.Counts(t, "ratelimit.requests"))
	h := c.Histogram(t)
	assert.Len(t, h, 2)
	assert.Equal(t, uint64(2), h["ratelimit.backend=distributed,ratelimit.policy=api,ratelimit.result=allowed"].Count)
}

// TestMaxSeries: past the bound, new (policy, backend) pairs share "_OTHER".
func TestMaxSeries(t *testing.T) {
	obs, reader := newObserver(t, otelmetrics.WithMaxSeries(2))
	for _, p := range []string{"a", "b", "c", "d", "a"} {
		obs.ObserveDecision(context.Background(), observe.Decision{Policy: p, Backend: "local"})
	}
	assert.Equal(t, map[string]int64{
		"ratelimit.policy=a,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false":      2,
		"ratelimit.policy=b,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false":      1,
		"ratelimit.policy=_OTHER,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false": 2,
	}, collect(t, reader).Counts(t, "ratelimit.requests"))
}

// TestGlobalProvider: without WithMeterProvider, the global provider at New.
func TestGlobalProvider(t *testing.T) {
	prev := otel.GetMeterProvider()
	defer otel.SetMeterProvider(prev)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	otel.SetMeterProvider(mp)

	obs, err := otelmetrics.New(otelmetrics.WithMeterProvider(nil))
	require.NoError(t, err)
	// a nil context is tolerated
	obs.ObserveDecision(nil, observe.Decision{Policy: "api", Backend: "local", Outcome: observe.OutcomeDenied}) //nolint:staticcheck
	assert.Equal(t, map[string]int64{"ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=denied,ratelimit.shadow=false": 1},
		collect(t, reader).Counts(t, "ratelimit.requests"))
}

// TestAllocs: once a (policy, backend) pair has been seen, recording allocates nothing,
// directly and through observe.Wrap on the local backend.
func TestAllocs(t *testing.T) {
	obs, _ := newObserver(t)
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	limiter := observe.Wrap(l, obs, "api")
	ctx := context.Background()
	limit := ratelimit.PerSecond(1e9)
	d := observe.Decision{Policy: "api", Backend: "local", Outcome: observe.OutcomeDenied, Cached: true}
	obs.ObserveDecision(ctx, d)
	_, _ = limiter.Allow(ctx, "k", limit)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { obs.ObserveDecision(ctx, d) }))
	assert.Zero(t, testing.AllocsPerRun(1000, func() {
		if _, err := limiter.Allow(ctx, "k", limit); err != nil {
			panic(err)
		}
	}))
}

func BenchmarkObserveDecision(b *testing.B) {
	obs, _ := newObserver(b)
	ctx := context.Background()
	d := observe.Decision{Policy: "api", Backend: "local", Cost: 1, Duration: 100 * time.Nanosecond}
	b.ReportAllocs()
	for b.Loop() {
		obs.ObserveDecision(ctx, d)
	}
}

// TestPriority: ratelimit.requests counts each priority apart, under ratelimit.priority;
// a priority out of range counts as the nearest one, so the attribute has three values.
func TestPriority(t *testing.T) {
	obs, reader := newObserver(t)
	ctx := context.Background()
	for _, d := range []observe.Decision{
		{Policy: "api", Priority: priority.Critical, Outcome: observe.OutcomeAllowed},
		{Policy: "api", Priority: priority.Normal, Outcome: observe.OutcomeAllowed},
		{Policy: "api", Priority: priority.Sheddable, Outcome: observe.OutcomeDenied},
		{Policy: "api", Priority: priority.Sheddable, Outcome: observe.OutcomeDenied, Shadow: true},
		{Policy: "api", Priority: priority.Normal, Outcome: observe.OutcomeError, ErrorKind: observe.KindTimeout},
		{Policy: "api", Priority: 7, Outcome: observe.OutcomeDenied},
		{Policy: "api", Priority: -1, Outcome: observe.OutcomeAllowed},
	} {
		obs.ObserveDecision(ctx, d)
	}
	c := collect(t, reader)
	assert.Equal(t, map[string]int64{
		"ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false":                2,
		"ratelimit.policy=api,ratelimit.priority=normal,ratelimit.result=allowed,ratelimit.shadow=false":                  1,
		"ratelimit.policy=api,ratelimit.priority=sheddable,ratelimit.result=denied,ratelimit.shadow=false":                2,
		"ratelimit.policy=api,ratelimit.priority=sheddable,ratelimit.result=denied,ratelimit.shadow=true":                 1,
		"error.type=timeout,ratelimit.policy=api,ratelimit.priority=normal,ratelimit.result=error,ratelimit.shadow=false": 1,
	}, c.Counts(t, "ratelimit.requests"))
	// The duration is not by priority: one series per result.
	assert.Len(t, c.Histogram(t), 3)
	assert.Zero(t, testing.AllocsPerRun(100, func() {
		obs.ObserveDecision(ctx, observe.Decision{Policy: "api", Priority: priority.Sheddable})
	}))
}

// TestDurationSample: ratelimit.requests counts every decision, and the histogram records
// those the reporter timed, one in n of the decisions it reports, the first included.
// Through observe.Wrap on a local limiter, 40 allowed decisions at one priority, then 3
// at another, then 3 denied: 46 decisions, of which n = 16 times the 1st, 17th and 33rd,
// all allowed; n = 4 times the 1st, 5th, ..., 45th, 11 of them among the 43 allowed and
// one (the 45th) among the denied.
func TestDurationSample(t *testing.T) {
	tests := []struct {
		name            string
		opts            []otelmetrics.Option
		sample          int
		allowed, denied uint64
	}{
		{"default", nil, 16, 3, 0},
		{"below 1 is the default", []otelmetrics.Option{otelmetrics.WithDurationSample(0)}, 16, 3, 0},
		{"one in 4", []otelmetrics.Option{otelmetrics.WithDurationSample(4)}, 4, 11, 1},
		{"every one", []otelmetrics.Option{otelmetrics.WithDurationSample(1)}, 1, 43, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs, reader := otelmetricstest.NewObserver(t, tt.opts...)
			assert.Equal(t, tt.sample, obs.DurationSample())
			l := local.New(local.WithCleanupInterval(0))
			defer l.Close()
			limiter := observe.Wrap(l, obs, "api")
			decide := func(n int, key string, limit ratelimit.Limit, p priority.Level, allowed bool) {
				ctx := priority.With(context.Background(), p)
				for range n {
					res, err := limiter.Allow(ctx, key, limit)
					require.NoError(t, err)
					require.Equal(t, allowed, res.Allowed)
				}
			}
			a, b := ratelimit.Limit{Rate: 1e-3, Burst: 40}, ratelimit.Limit{Rate: 1e-3, Burst: 100}
			decide(40, "a", a, priority.Critical, true)
			decide(3, "b", b, priority.Sheddable, true)
			decide(3, "a", a, priority.Critical, false)

			c := collect(t, reader)
			assert.Equal(t, map[string]int64{
				"ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false":  40,
				"ratelimit.policy=api,ratelimit.priority=sheddable,ratelimit.result=allowed,ratelimit.shadow=false": 3,
				"ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=denied,ratelimit.shadow=false":   3,
			}, c.Counts(t, "ratelimit.requests"))
			h := c.Histogram(t)
			assert.Equal(t, tt.allowed, h["ratelimit.backend=local,ratelimit.policy=api,ratelimit.result=allowed"].Count)
			assert.Equal(t, tt.denied, h["ratelimit.backend=local,ratelimit.policy=api,ratelimit.result=denied"].Count)
		})
	}
}

// TestDurationRecorded: the Observer records every duration it is told, whatever its n,
// and no negative one (a decision its reporter did not time): 5 timed and 2 untimed
// decisions of 30 µs make 5 measurements, each in the bucket (25 µs, 50 µs].
func TestDurationRecorded(t *testing.T) {
	obs, reader := otelmetricstest.NewObserver(t) // one in 16
	ctx := context.Background()
	for _, took := range []time.Duration{30e3, -1, 30e3, 30e3, -1, 30e3, 30e3} {
		obs.ObserveDecision(ctx, observe.Decision{Policy: "api", Backend: "local", Duration: took})
	}
	c := collect(t, reader)
	assert.Equal(t, map[string]int64{
		"ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false": 7,
	}, c.Counts(t, "ratelimit.requests"))
	allowed := c.Histogram(t)["ratelimit.backend=local,ratelimit.policy=api,ratelimit.result=allowed"]
	assert.Equal(t, uint64(5), allowed.Count)
	assert.Equal(t, uint64(5), allowed.BucketCounts[2])
	assert.InDelta(t, 5*30e-6, allowed.Sum, 1e-12)
}
