package prommetrics_test

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/prommetrics"
)

// scrape gathers c from a registry of its own and returns every sample as
// `name{label="value",...} value`, sorted; histograms as their count.
func scrape(t *testing.T, c *prommetrics.Collector) []string {
	t.Helper()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(c))
	families, err := reg.Gather()
	require.NoError(t, err)
	var out []string
	for _, f := range families {
		for _, m := range f.Metric {
			var labels []string
			for _, l := range m.Label {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			var v float64
			switch {
			case m.Counter != nil:
				v = m.Counter.GetValue()
			case m.Gauge != nil:
				v = m.Gauge.GetValue()
			case m.Histogram != nil:
				v = float64(m.Histogram.GetSampleCount())
			}
			out = append(out, f.GetName()+"{"+strings.Join(labels, ",")+"} "+strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	sort.Strings(out)
	return out
}

// TestSeedTimeline: Rate 1/s, Burst 2, three requests at once: two allowed, one denied;
// the histogram counts three decisions.
func TestSeedTimeline(t *testing.T) {
	c := prommetrics.New()
	now := time.Date(2026, 1, 1, 0, 0, 0, 100e6, time.UTC)
	l := local.New(local.WithClock(func() time.Time { return now }), local.WithCleanupInterval(0))
	defer l.Close()
	limiter := observe.Wrap(l, c, "api")
	for range 3 {
		_, err := limiter.Allow(context.Background(), "client", ratelimit.Limit{Rate: 1, Burst: 2})
		require.NoError(t, err)
	}
	assert.Equal(t, []string{
		`ratelimit_decision_duration_seconds{ratelimit_backend="local",ratelimit_policy="api",ratelimit_result="allowed"} 2`,
		`ratelimit_decision_duration_seconds{ratelimit_backend="local",ratelimit_policy="api",ratelimit_result="denied"} 1`,
		`ratelimit_requests_total{ratelimit_policy="api",ratelimit_priority="critical",ratelimit_result="allowed",ratelimit_shadow="false"} 2`,
		`ratelimit_requests_total{ratelimit_policy="api",ratelimit_priority="critical",ratelimit_result="denied",ratelimit_shadow="false"} 1`,
	}, scrape(t, c))
}

// TestPolicyOverBackends: a policy decided by two backends is one series of requests, and
// two of durations.
func TestPolicyOverBackends(t *testing.T) {
	c := prommetrics.New()
	for _, backend := range []string{"distributed", "local", "distributed"} {
		c.ObserveDecision(context.Background(), observe.Decision{Policy: "api", Backend: backend})
	}
	assert.Equal(t, []string{
		`ratelimit_decision_duration_seconds{ratelimit_backend="distributed",ratelimit_policy="api",ratelimit_result="allowed"} 2`,
		`ratelimit_decision_duration_seconds{ratelimit_backend="local",ratelimit_policy="api",ratelimit_result="allowed"} 1`,
		`ratelimit_requests_total{ratelimit_policy="api",ratelimit_priority="critical",ratelimit_result="allowed",ratelimit_shadow="false"} 3`,
	}, scrape(t, c))
}

func TestMaxSeries(t *testing.T) {
	c := prommetrics.New(prommetrics.WithMaxSeries(2))
	for _, p := range []string{"a", "b", "c", "d", "a"} {
		c.ObserveDecision(context.Background(), observe.Decision{Policy: p, Backend: "local", Outcome: observe.OutcomeDenied})
	}
	c.ObserveDecision(context.Background(), observe.Decision{Policy: "a", Backend: "local", Outcome: observe.OutcomeError, ErrorKind: 99})
	got := scrape(t, c)
	assert.Contains(t, got, `ratelimit_requests_total{ratelimit_policy="a",ratelimit_priority="critical",ratelimit_result="denied",ratelimit_shadow="false"} 2`)
	assert.Contains(t, got, `ratelimit_requests_total{ratelimit_policy="b",ratelimit_priority="critical",ratelimit_result="denied",ratelimit_shadow="false"} 1`)
	assert.Contains(t, got, `ratelimit_requests_total{ratelimit_policy="_OTHER",ratelimit_priority="critical",ratelimit_result="denied",ratelimit_shadow="false"} 2`)
	assert.Contains(t, got, `ratelimit_requests_total{error_type="_OTHER",ratelimit_policy="a",ratelimit_priority="critical",ratelimit_result="error",ratelimit_shadow="false"} 1`)
	assert.Len(t, got, 8) // 4 series of requests, 4 of durations
}

// TestNoKeys: 10,000 distinct keys make a fixed number of series, none naming a key.
func TestNoKeys(t *testing.T) {
	c := prommetrics.New()
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	limiter := observe.Wrap(l, c, "api")
	keys := map[string]bool{}
	for i := range 10_000 {
		key := "user-" + strconv.Itoa(i)
		keys[key] = true
		for range 2 {
			_, err := limiter.Allow(context.Background(), key, ratelimit.Limit{Rate: 1e-6, Burst: 1})
			require.NoError(t, err)
		}
	}
	got := scrape(t, c)
	assert.Equal(t, []string{
		`ratelimit_decision_duration_seconds{ratelimit_backend="local",ratelimit_policy="api",ratelimit_result="allowed"} 10000`,
		`ratelimit_decision_duration_seconds{ratelimit_backend="local",ratelimit_policy="api",ratelimit_result="denied"} 10000`,
		`ratelimit_requests_total{ratelimit_policy="api",ratelimit_priority="critical",ratelimit_result="allowed",ratelimit_shadow="false"} 10000`,
		`ratelimit_requests_total{ratelimit_policy="api",ratelimit_priority="critical",ratelimit_result="denied",ratelimit_shadow="false"} 10000`,
	}, got)
	for _, line := range got {
		for key := range keys {
			require.NotContains(t, line, `"`+key+`"`)
		}
	}
}

// TestConcurrent: decisions from many goroutines while scrapes run are all counted.
func TestConcurrent(t *testing.T) {
	c := prommetrics.New()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(c))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				c.ObserveDecision(context.Background(), observe.Decision{
					Policy: "p" + strconv.Itoa(g%2), Backend: "local", Outcome: observe.Outcome(i % 2),
					Duration: time.Duration(i) * time.Microsecond,
				})
			}
		})
	}
	for range 20 {
		_, err := reg.Gather()
		require.NoError(t, err)
	}
	wg.Wait()
	got := scrape(t, c)
	for _, p := range []string{"p0", "p1"} {
		for _, r := range []string{"allowed", "denied"} {
			assert.Contains(t, got, `ratelimit_requests_total{ratelimit_policy="`+p+`",ratelimit_priority="critical",ratelimit_result="`+r+`",ratelimit_shadow="false"} 2000`)
			assert.Contains(t, got, `ratelimit_decision_duration_seconds{ratelimit_backend="local",ratelimit_policy="`+p+`",ratelimit_result="`+r+`"} 2000`)
		}
	}
}

// TestAllocs: once its policy and backend have been seen, a decision allocates nothing.
func TestAllocs(t *testing.T) {
	c := prommetrics.New()
	ctx := context.Background()
	d := observe.Decision{Policy: "api", Backend: "local", Outcome: observe.OutcomeDenied, Cached: true, Duration: time.Microsecond}
	c.ObserveDecision(ctx, d)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { c.ObserveDecision(ctx, d) }))
}

func BenchmarkObserveDecision(b *testing.B) {
	c := prommetrics.New()
	ctx := context.Background()
	d := observe.Decision{Policy: "api", Backend: "local", Cost: 1, Duration: 100 * time.Nanosecond}
	b.ReportAllocs()
	for b.Loop() {
		c.ObserveDecision(ctx, d)
	}
}
