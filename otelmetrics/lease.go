package otelmetrics

import "go.opentelemetry.io/otel/metric"

// registerGrants makes ratelimit.lease.grants, which counts package lease's calls to Redis
// for a chunk (observe.Decision.Lease) by policy and result: tokens granted, a chunk
// refused, Redis failed. ratelimit.requests does not count them.
func (o *Observer) registerGrants(meter metric.Meter, maxSeries int) error {
	var err error
	o.grants, o.grantCalls, err = registerOutcomes(meter, maxSeries, "ratelimit.lease.grants", "{call}",
		"Calls to Redis for a chunk of a leased key, by policy and result: tokens granted, refused, or not decided.")
	return err
}
