package prommetrics

import "github.com/prometheus/client_golang/prometheus"

// The counter of package lease's grants (observe.Decision.Lease), as otelmetrics names it:
// calls to Redis for a chunk, by policy and result (some tokens granted, a chunk refused,
// Redis failed). ratelimit_requests_total does not count them.
var (
	grantsDesc = prometheus.NewDesc("ratelimit_lease_grants_total",
		"Calls to Redis for a chunk of a leased key, by policy and result: tokens granted, refused, or not decided.",
		[]string{"ratelimit_policy", "ratelimit_result"}, nil)
	grantErrorsDesc = prometheus.NewDesc("ratelimit_lease_grants_total",
		"Calls to Redis for a chunk of a leased key, by policy and result: tokens granted, refused, or not decided.",
		[]string{"error_type", "ratelimit_policy", "ratelimit_result"}, nil)
)
