package otelmetrics_test

import (
	"context"
	"fmt"
	"sort"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/otelmetrics"
)

// Three requests under Rate 1/s, Burst 2: two allowed, one denied, as ratelimit.requests
// counts them.
func ExampleNew() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	obs, err := otelmetrics.New(otelmetrics.WithMeterProvider(provider))
	if err != nil {
		panic(err)
	}
	limiter := observe.Wrap(local.New(), obs, "api")
	defer limiter.Close()
	for range 3 {
		limiter.Allow(context.Background(), "client", ratelimit.Limit{Rate: 1, Burst: 2})
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	var lines []string
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok {
			for _, p := range sum.DataPoints {
				lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value))
			}
		}
	}
	sort.Strings(lines)
	for _, l := range lines {
		fmt.Println(l)
	}
	// Output:
	// ratelimit.requests{ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false} 2
	// ratelimit.requests{ratelimit.policy=api,ratelimit.priority=critical,ratelimit.result=denied,ratelimit.shadow=false} 1
}
