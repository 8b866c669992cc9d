// Package otelmetricstest reads what an otelmetrics.Observer recorded, through the real
// OpenTelemetry SDK and a ManualReader: for the tests of a service that counts its
// rate-limit decisions, as for the tests of this module.
package otelmetricstest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluice-go/ratelimit/otelmetrics"
)

// NewObserver returns an otelmetrics Observer on a real SDK MeterProvider, and the reader
// that collects from it by hand. Both are shut down when the test ends.
func NewObserver(t testing.TB, opts ...otelmetrics.Option) (*otelmetrics.Observer, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := otelmetrics.New(append([]otelmetrics.Option{otelmetrics.WithMeterProvider(mp)}, opts...)...)
	require.NoError(t, err)
	return obs, reader
}

// Collected is one collection, by instrument name.
type Collected map[string]metricdata.Metrics

// Collect collects what r holds now.
func Collect(t testing.TB, r *sdkmetric.ManualReader) Collected {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := Collected{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, otelmetrics.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// Attrs encodes a series' attributes as "k=v,k=v", sorted by key.
func Attrs(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }

// Counts returns the value of each series of an int64 sum, by its attributes.
func (c Collected) Counts(t testing.TB, name string) map[string]int64 {
	t.Helper()
	sum, ok := c[name].Data.(metricdata.Sum[int64])
	require.True(t, ok, "%s is %T", name, c[name].Data)
	out := map[string]int64{}
	for _, p := range sum.DataPoints {
		out[Attrs(p.Attributes)] = p.Value
	}
	return out
}

// Histogram returns each series of ratelimit.decision.duration by its attributes. The
// Observer's reporters time one decision in 16 by default, and it records only those: a
// test that reads every one passes otelmetrics.WithDurationSample(1) to NewObserver.
func (c Collected) Histogram(t testing.TB) map[string]metricdata.HistogramDataPoint[float64] {
	t.Helper()
	h, ok := c["ratelimit.decision.duration"].Data.(metricdata.Histogram[float64])
	require.True(t, ok)
	out := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, p := range h.DataPoints {
		out[Attrs(p.Attributes)] = p
	}
	return out
}
