package prommetrics_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/otlptranslator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/otelmetrics"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/prommetrics"
)

var update = flag.Bool("update", false, "rewrite testdata/metrics.golden")

// traffic tells o of a fixed set of decisions, and each hook of a fixed set of the circuit
// breaker's transitions: every result, shadow and not, every priority, every error kind, a
// denial-cache hit, durations in several buckets and on a bucket's upper bound (which belongs to
// that bucket).
func traffic(o observe.Observer, hooks ...func(fallback.StateChange)) {
	ctx := context.Background()
	us := time.Microsecond
	for _, d := range []observe.Decision{
		{Policy: "api", Backend: "local", Outcome: observe.OutcomeAllowed, Duration: 3 * us},
		{Policy: "api", Backend: "local", Outcome: observe.OutcomeAllowed, Duration: 10 * us},
		{Policy: "api", Backend: "local", Outcome: observe.OutcomeDenied, Duration: 12 * us},
		{Policy: "api", Backend: "distributed", Outcome: observe.OutcomeAllowed, Duration: 180 * us},
		{Policy: "api", Backend: "distributed", Outcome: observe.OutcomeError, ErrorKind: observe.KindTimeout, Duration: 50 * time.Millisecond},
		{Policy: "api", Backend: "distributed", Outcome: observe.OutcomeError, ErrorKind: observe.KindUnavailable, Duration: 900 * us},
		{Policy: "api", Backend: "fallback", Outcome: observe.OutcomeDenied, Cached: true, Duration: 1 * us},
		{Policy: "login", Backend: "local", Outcome: observe.OutcomeError, ErrorKind: observe.KindInvalidInput},
		{Policy: "login", Backend: "local", Outcome: observe.OutcomeError, ErrorKind: observe.KindCanceled, Shadow: true},
		{Policy: "login", Backend: "local", Outcome: observe.OutcomeError, ErrorKind: observe.KindClosed, Duration: time.Second},
		{Policy: "new", Backend: "local", Outcome: observe.OutcomeDenied, Shadow: true, Duration: 2 * us},
		{Policy: "new", Backend: "local", Outcome: observe.OutcomeAllowed, Shadow: true, Duration: 2 * us},
		{Policy: "api", Backend: "distributed", Priority: priority.Sheddable, Outcome: observe.OutcomeDenied, Duration: 150 * us},
		{Policy: "api", Backend: "distributed", Priority: priority.Normal, Outcome: observe.OutcomeAllowed, Duration: 170 * us},
		{Policy: "api", Backend: "distributed", Priority: priority.Normal, Outcome: observe.OutcomeError, ErrorKind: observe.KindTimeout, Duration: 50 * time.Millisecond},
		// A concurrency limit's decisions: their own counter, not ratelimit_requests_total.
		{Policy: "exports", Backend: "local", Concurrency: true, Outcome: observe.OutcomeAllowed, Cost: 1},
		{Policy: "exports", Backend: "distributed", Concurrency: true, Outcome: observe.OutcomeAllowed, Cost: 1, Duration: 300 * us},
		{Policy: "exports", Backend: "local", Concurrency: true, Outcome: observe.OutcomeDenied, Cost: 1, Duration: 20 * time.Millisecond},
		{Policy: "exports", Backend: "distributed", Concurrency: true, Outcome: observe.OutcomeError, ErrorKind: observe.KindTimeout, Cost: 1},
		{Policy: "api", Backend: "local", Concurrency: true, Outcome: observe.OutcomeError, ErrorKind: observe.KindCanceled, Cost: 1},
		{Policy: "hot", Backend: "lease", Lease: true, Outcome: observe.OutcomeAllowed, Cost: 25, Remaining: 25, Duration: 200 * us},
		{Policy: "hot", Backend: "lease", Lease: true, Outcome: observe.OutcomeAllowed, Cost: 25, Remaining: 3, Duration: 200 * us},
		{Policy: "hot", Backend: "lease", Lease: true, Outcome: observe.OutcomeDenied, Cost: 25, Duration: 200 * us},
		{Policy: "hot", Backend: "lease", Lease: true, Outcome: observe.OutcomeError, ErrorKind: observe.KindTimeout, Cost: 25},
	} {
		o.ObserveDecision(ctx, d)
	}
	for _, c := range []fallback.StateChange{
		{From: fallback.Closed, To: fallback.Open},
		{From: fallback.Open, To: fallback.HalfOpen},
		{From: fallback.HalfOpen, To: fallback.Open},
		{From: fallback.Open, To: fallback.HalfOpen},
		{From: fallback.HalfOpen, To: fallback.Closed},
	} {
		for _, hook := range hooks {
			hook(c)
		}
	}
}

func buckets() int { return 42 }

// fixedStats is a concurrency limiter whose snapshot never changes.
type fixedStats concurrency.Stats

func (s fixedStats) Stats() concurrency.Stats { return concurrency.Stats(s) }

var (
	exports = fixedStats{Keys: 3, InFlight: 5, Waiting: 2, MinLimit: 4, MaxLimit: 10}
	idle    = fixedStats{} // no key: no limit in force
)

// exposition gathers g and writes it in the Prometheus text format, without the labels
// and families the OpenTelemetry exporter adds about itself (otel_scope_*, target_info).
func exposition(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	families, err := g.Gather()
	require.NoError(t, err)
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if f.GetName() == "target_info" || strings.HasPrefix(f.GetName(), "otel_scope_") {
			continue
		}
		for _, m := range f.Metric {
			var kept []*dto.LabelPair
			for _, l := range m.Label {
				if !strings.HasPrefix(l.GetName(), "otel_scope_") {
					kept = append(kept, l)
				}
			}
			m.Label = kept
		}
		require.NoError(t, enc.Encode(f))
	}
	return buf.String()
}

// TestGolden: the same traffic through otelmetrics and the OpenTelemetry Prometheus
// exporter, and through a Collector, gives the same exposition, which is
// testdata/metrics.golden.
func TestGolden(t *testing.T) {
	otelRegistry := prometheus.NewRegistry()
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(otelRegistry),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
		otelprom.WithoutTargetInfo(),
	)
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())
	// Every duration in otelmetrics' histogram, as in prommetrics' (see WithDurationSample).
	viaOTel, err := otelmetrics.New(otelmetrics.WithMeterProvider(mp), otelmetrics.WithBuckets("local", buckets),
		otelmetrics.WithConcurrency("exports", exports), otelmetrics.WithConcurrency("idle", idle),
		otelmetrics.WithDurationSample(1))
	require.NoError(t, err)

	promRegistry := prometheus.NewRegistry()
	direct := prommetrics.New(prommetrics.WithBuckets("local", buckets),
		prommetrics.WithConcurrency("exports", exports), prommetrics.WithConcurrency("idle", idle))
	promRegistry.MustRegister(direct)

	traffic(observe.Join(viaOTel, direct), viaOTel.ObserveBreaker, direct.ObserveBreaker)
	got := exposition(t, promRegistry)
	assert.Equal(t, exposition(t, otelRegistry), got)

	const golden = "testdata/metrics.golden"
	if *update {
		require.NoError(t, os.WriteFile(golden, []byte(got), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), got)
}
