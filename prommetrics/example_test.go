package prommetrics_test

import (
	"context"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/prommetrics"
)

// Three requests under Rate 1/s, Burst 2: two allowed, one denied, as
// ratelimit_requests_total counts them.
func ExampleNew() {
	metrics := prommetrics.New()
	registry := prometheus.NewRegistry()
	registry.MustRegister(metrics)

	limiter := observe.Wrap(local.New(), metrics, "api")
	defer limiter.Close()
	for range 3 {
		limiter.Allow(context.Background(), "client", ratelimit.Limit{Rate: 1, Burst: 2})
	}

	families, err := registry.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() != "ratelimit_requests_total" {
			continue
		}
		for _, m := range f.Metric {
			fmt.Print(f.GetName(), "{")
			for i, l := range m.Label {
				if i > 0 {
					fmt.Print(",")
				}
				fmt.Printf("%s=%q", l.GetName(), l.GetValue())
			}
			fmt.Println("}", m.Counter.GetValue())
		}
	}
	// Output:
	// ratelimit_requests_total{ratelimit_policy="api",ratelimit_priority="critical",ratelimit_result="allowed",ratelimit_shadow="false"} 2
	// ratelimit_requests_total{ratelimit_policy="api",ratelimit_priority="critical",ratelimit_result="denied",ratelimit_shadow="false"} 1
}
