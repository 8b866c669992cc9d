package otelmetrics_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/otelmetrics"
	"github.com/sluice-go/ratelimit/otelmetrics/otelmetricstest"
)

// TestConcurrency: a concurrency limiter's permits, aggregated over its keys under the
// policy name given, read from the real SDK at each collection; and a key never appears.
func TestConcurrency(t *testing.T) {
	l := local.New(local.WithAdaptive(concurrency.AIMD{Initial: 4, Backoff: 0.5}))
	defer l.Close()
	_, reader := newObserver(t, otelmetrics.WithConcurrency("exports", l))
	gauges := func(c otelmetricstest.Collected, name string) map[string]int64 {
		t.Helper()
		out := map[string]int64{}
		if _, ok := c[name]; !ok {
			return out // no series at all
		}
		g, ok := c[name].Data.(metricdata.Gauge[int64])
		require.True(t, ok, "%s is %T", name, c[name].Data)
		for _, p := range g.DataPoints {
			out[attrs(p.Attributes)] = p.Value
		}
		return out
	}

	// No key yet: the counts are 0, and there is no limit in force to report.
	c := collect(t, reader)
	assert.Equal(t, map[string]int64{"ratelimit.policy=exports": 0}, c.Counts(t, "ratelimit.concurrency.in_flight"))
	assert.Empty(t, gauges(c, "ratelimit.concurrency.limit.min"))

	// tenant-a drops once: its limit falls from 4 to 2; tenant-b holds one permit at 4.
	p, err := l.Acquire(t.Context(), "tenant-a", 100)
	require.NoError(t, err)
	p.ReleaseWith(concurrency.Dropped)
	q, err := l.Acquire(t.Context(), "tenant-b", 100)
	require.NoError(t, err)
	defer q.Release()

	c = collect(t, reader)
	policy := "ratelimit.policy=exports"
	assert.Equal(t, map[string]int64{policy: 2}, gauges(c, "ratelimit.concurrency.limit.min"))
	assert.Equal(t, map[string]int64{policy: 4}, gauges(c, "ratelimit.concurrency.limit.max"))
	assert.Equal(t, map[string]int64{policy: 1}, c.Counts(t, "ratelimit.concurrency.in_flight"))
	assert.Equal(t, map[string]int64{policy: 0}, c.Counts(t, "ratelimit.concurrency.waiting"))
	assert.Equal(t, map[string]int64{policy: 2}, c.Counts(t, "ratelimit.concurrency.keys"))
	assert.False(t, c["ratelimit.concurrency.in_flight"].Data.(metricdata.Sum[int64]).IsMonotonic)
	for name, m := range c {
		assert.NotContains(t, fmt.Sprint(m.Data), "tenant-", "%s names a key", name)
	}
}

func TestConcurrencyTwicePerPolicy(t *testing.T) {
	l := local.New()
	defer l.Close()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	defer mp.Shutdown(context.Background())
	_, err := otelmetrics.New(otelmetrics.WithMeterProvider(mp),
		otelmetrics.WithConcurrency("exports", l), otelmetrics.WithConcurrency("exports", l))
	assert.ErrorContains(t, err, `WithConcurrency given twice for policy "exports"`)
}
