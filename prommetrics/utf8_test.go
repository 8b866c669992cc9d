package prommetrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/otelmetrics"
	"github.com/sluice-go/ratelimit/prommetrics"
)

// scrapeHTTP scrapes reg through promhttp over a real server, requires a 200, and returns
// the exposition.
func scrapeHTTP(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	return string(body)
}

// Names that are not valid UTF-8 ("\xff", "\xfe") reach the labels with each invalid byte
// replaced by U+FFFD, so the registry still gathers and every scrape succeeds. Two names
// that differ only in invalid bytes count in one series.
func TestInvalidUTF8Names(t *testing.T) {
	c := prommetrics.New(prommetrics.WithBuckets("local\xff", func() int { return 3 }))
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(c))
	ctx := context.Background()
	c.ObserveDecision(ctx, observe.Decision{Policy: "\xff", Backend: "local", Outcome: observe.OutcomeDenied, Cached: true})
	c.ObserveDecision(ctx, observe.Decision{Policy: "\xfe", Backend: "local", Outcome: observe.OutcomeDenied})
	c.ObserveDecision(ctx, observe.Decision{Policy: "api", Backend: "redis\xff", Outcome: observe.OutcomeAllowed})

	body := scrapeHTTP(t, reg)

	assert.Contains(t, body, "ratelimit_requests_total{ratelimit_policy=\"\uFFFD\",")
	got := scrape(t, c)
	// U+FFFD sorts after ASCII, so the "api" series comes first.
	assert.Equal(t, []string{
		"ratelimit_buckets{ratelimit_backend=\"local\uFFFD\"} 3",
		"ratelimit_decision_duration_seconds{ratelimit_backend=\"local\",ratelimit_policy=\"\uFFFD\",ratelimit_result=\"denied\"} 2",
		"ratelimit_decision_duration_seconds{ratelimit_backend=\"redis\uFFFD\",ratelimit_policy=\"api\",ratelimit_result=\"allowed\"} 1",
		"ratelimit_denial_cache_hits_total{ratelimit_policy=\"\uFFFD\"} 1",
		"ratelimit_requests_total{ratelimit_policy=\"api\",ratelimit_priority=\"critical\",ratelimit_result=\"allowed\",ratelimit_shadow=\"false\"} 1",
		"ratelimit_requests_total{ratelimit_policy=\"\uFFFD\",ratelimit_priority=\"critical\",ratelimit_result=\"denied\",ratelimit_shadow=\"false\"} 2",
	}, got)
}

// Through otelmetrics and the OpenTelemetry Prometheus exporter, a policy that is not
// valid UTF-8 leaves every scrape successful too, with the same label value.
func TestInvalidUTF8NamesThroughOTel(t *testing.T) {
	reg := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(reg),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes), otelprom.WithoutTargetInfo())
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	o, err := otelmetrics.New(otelmetrics.WithMeterProvider(mp))
	require.NoError(t, err)
	o.ObserveDecision(context.Background(), observe.Decision{Policy: "\xff", Backend: "local", Outcome: observe.OutcomeDenied})

	body := scrapeHTTP(t, reg)
	// After the exporter's otel_scope_* labels:
	assert.Contains(t, body, ",ratelimit_policy=\"\uFFFD\",ratelimit_priority=\"critical\",ratelimit_result=\"denied\",ratelimit_shadow=\"false\"} 1\n")
}
