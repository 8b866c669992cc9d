// Package otelmetrics records rate-limiting decisions as OpenTelemetry metrics. Its
// Observer is an observe.Observer: give it to a middleware (WithObserver) or to
// observe.Wrap, and its ObserveBreaker method to fallback.WithStateHook for the circuit
// breaker's transitions.
//
//	obs, err := otelmetrics.New(otelmetrics.WithMeterProvider(provider))
//	limiter := observe.Wrap(local.New(), obs, "api") // or a middleware's WithObserver(obs)
//
// with fallback.WithStateHook(obs.ObserveBreaker) for the breaker; ExampleNew runs it.
//
// # Instruments
//
//   - ratelimit.requests (Counter, {request}): ratelimit.policy, ratelimit.priority
//     (critical, normal or sheddable: observe.Decision.Priority), ratelimit.result
//     (allowed, denied or error), ratelimit.shadow (true on shadow decisions, false
//     otherwise) and, on errors only, error.type (timeout, unavailable, invalid_input,
//     canceled, closed).
//   - ratelimit.decision.duration (Histogram, s, buckets from 10 µs to 250 ms):
//     ratelimit.policy, ratelimit.backend, ratelimit.result; one decision in 16, timed
//     by the reporter (WithDurationSample).
//   - ratelimit.fallback.transitions (Counter, {transition}): ratelimit.fallback.from and
//     ratelimit.fallback.to (closed, open, half-open).
//   - ratelimit.denial_cache.hits (Counter, {request}): ratelimit.policy.
//   - ratelimit.buckets (asynchronous UpDownCounter, {bucket}): ratelimit.backend; only
//     with WithBuckets.
//   - ratelimit.concurrency.limit.min and ratelimit.concurrency.limit.max (asynchronous
//     Gauges, {permit}), ratelimit.concurrency.in_flight ({permit}),
//     ratelimit.concurrency.waiting ({request}) and ratelimit.concurrency.keys ({key})
//     (asynchronous UpDownCounters): ratelimit.policy; only with WithConcurrency, from the
//     limiter's concurrency.Stats. The limits are reported while the limiter tracks a key.
//   - ratelimit.concurrency.requests (Counter, {request}): ratelimit.policy,
//     ratelimit.result (allowed: a permit granted; denied: none free in time; error) and,
//     on errors only, error.type: the decisions of a middleware's WithConcurrency
//     (observe.Decision.Concurrency), which ratelimit.requests does not count.
//   - ratelimit.lease.grants (Counter, {call}): ratelimit.policy, ratelimit.result and, on
//     errors, error.type: package lease's calls to Redis for a chunk
//     (observe.Decision.Lease), which ratelimit.requests does not count.
//   - ratelimit.settles and ratelimit.reservations (Counters, {call}): ratelimit.policy,
//     ratelimit.result and, on errors, error.type: settles (observe.Decision.Settle;
//     allowed: settled, error: refused or not made) and slots booked ahead
//     (observe.Decision.Reserve; denied: none within the wait), which ratelimit.requests
//     does not count; ratelimit.settle.tokens (Counter, {token}): ratelimit.policy and
//     ratelimit.settle.direction (overrun: charged past the estimate; refund: given back);
//     ratelimit.reserve.delay (Counter, s): ratelimit.policy, the time booked ahead.
//
// https://github.com/sluice-go/ratelimit/blob/main/docs/observability.md says what each
// answers, with queries and alerts.
//
// # Cardinality
//
// No attribute ever holds a key. The series are bounded by construction: the policies and
// backends seen (at most WithMaxSeries pairs, then "_OTHER") times the fixed values of the
// other attributes, however many keys are limited.
//
// # Cost
//
// An observed decision costs one or two atomic additions and, one time in 16, two readings
// of the clock and a histogram measurement on a precomputed attribute set; it allocates
// nothing (figures:
// https://github.com/sluice-go/ratelimit/blob/main/docs/performance.md#observation-and-several-limits).
package otelmetrics
