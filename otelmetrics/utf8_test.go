package otelmetrics_test

import (
	"context"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/otelmetrics"
)

// Names that are not valid UTF-8 ("\xff", "\xfe") reach the attributes with each invalid
// byte replaced by U+FFFD: the SDK takes any string, but the Prometheus exporter fails the
// scrape on such a value (see prommetrics' TestInvalidUTF8NamesThroughOTel). Two names that
// differ only in invalid bytes count in one series.
func TestInvalidUTF8Names(t *testing.T) {
	obs, reader := newObserver(t, otelmetrics.WithBuckets("local\xff", func() int { return 3 }))
	ctx := context.Background()
	obs.ObserveDecision(ctx, observe.Decision{Policy: "\xff", Backend: "local", Outcome: observe.OutcomeDenied, Cached: true})
	obs.ObserveDecision(ctx, observe.Decision{Policy: "\xfe", Backend: "local", Outcome: observe.OutcomeDenied})
	obs.ObserveDecision(ctx, observe.Decision{Policy: "api", Backend: "redis\xff", Outcome: observe.OutcomeAllowed})

	c := collect(t, reader)
	// Attrs encodes invalid bytes as U+FFFD itself, so read the values as they are.
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
			t.Fatalf("%s is %T", name, m.Data)
		}
		for _, set := range sets {
			for _, kv := range set.ToSlice() {
				assert.True(t, utf8.ValidString(kv.Value.AsString()), "%s: %s=%q", name, kv.Key, kv.Value.AsString())
			}
		}
	}
	assert.Equal(t, map[string]int64{
		"ratelimit.policy=\uFFFD,ratelimit.priority=critical,ratelimit.result=denied,ratelimit.shadow=false": 2,
		"ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false":   1,
	}, c.Counts(t, "ratelimit.requests"))
	assert.Equal(t, map[string]int64{"ratelimit.policy=\uFFFD": 1}, c.Counts(t, "ratelimit.denial_cache.hits"))
	assert.Equal(t, map[string]int64{"ratelimit.backend=local\uFFFD": 3}, c.Counts(t, "ratelimit.buckets"))
	durations := map[string]uint64{}
	for attrs, p := range c.Histogram(t) {
		durations[attrs] = p.Count
	}
	assert.Equal(t, map[string]uint64{
		"ratelimit.backend=local,ratelimit.policy=\uFFFD,ratelimit.result=denied":     2,
		"ratelimit.backend=redis\uFFFD,ratelimit.policy=api,ratelimit.result=allowed": 1,
	}, durations)
}
