// Package prommetrics records rate-limiting decisions as Prometheus metrics, for services
// that use github.com/prometheus/client_golang and no OpenTelemetry. It is a Go module of
// its own, so that client_golang never becomes a dependency of
// github.com/sluice-go/ratelimit.
//
// Its Collector is a prometheus.Collector and an observe.Observer: register it, give it to
// a middleware (WithObserver) or to observe.Wrap, and its ObserveBreaker method to
// fallback.WithStateHook for the circuit breaker's transitions.
//
//	metrics := prommetrics.New()
//	prometheus.MustRegister(metrics) // then observe.Wrap(limiter, metrics, "api") or WithObserver
//
// ExampleNew runs it.
//
// # Metrics
//
// The names, labels, help texts and buckets are those the OpenTelemetry Prometheus
// exporter gives the instruments of package otelmetrics (with the
// UnderscoreEscapingWithSuffixes translation, the Prometheus convention), less its
// otel_scope_* labels, so that one dashboard reads either; a golden test holds the two
// together.
//
//   - ratelimit_requests_total{ratelimit_policy, ratelimit_priority, ratelimit_result,
//     ratelimit_shadow}, and error_type on errors: decisions; ratelimit_priority is
//     critical, normal or sheddable (observe.Decision.Priority).
//   - ratelimit_decision_duration_seconds{ratelimit_backend, ratelimit_policy,
//     ratelimit_result}: a histogram of how long they took, buckets 10 µs to 250 ms.
//   - ratelimit_fallback_transitions_total{ratelimit_fallback_from, ratelimit_fallback_to}.
//   - ratelimit_denial_cache_hits_total{ratelimit_policy}.
//   - ratelimit_buckets{ratelimit_backend}, with WithBuckets.
//   - ratelimit_concurrency_limit_min, ratelimit_concurrency_limit_max,
//     ratelimit_concurrency_in_flight, ratelimit_concurrency_waiting and
//     ratelimit_concurrency_keys{ratelimit_policy}, with WithConcurrency: a concurrency
//     limiter's concurrency.Stats, aggregated over its keys.
//   - ratelimit_concurrency_requests_total{ratelimit_policy, ratelimit_result} (and
//     error_type on errors): the decisions of a middleware's WithConcurrency
//     (observe.Decision.Concurrency), which ratelimit_requests_total does not count.
//   - ratelimit_lease_grants_total{ratelimit_policy, ratelimit_result} (and error_type on
//     errors): package lease's calls to Redis for a chunk (observe.Decision.Lease).
//   - ratelimit_settles_total and ratelimit_reservations_total{ratelimit_policy,
//     ratelimit_result} (and error_type on errors): settles (observe.Decision.Settle) and
//     slots booked ahead (observe.Decision.Reserve); ratelimit_settle_tokens_total
//     {ratelimit_policy, ratelimit_settle_direction} (overrun, refund) and
//     ratelimit_reserve_delay_seconds_total{ratelimit_policy}, the time booked ahead.
//
// https://github.com/sluice-go/ratelimit/blob/main/docs/observability.md says what each
// answers, with PromQL for the alerts.
//
// No label ever holds a key, and the series are bounded by construction (WithMaxSeries).
// Recording a decision allocates nothing once its policy and backend have been seen.
//
// The Collector is unchecked (Describe sends no descriptor): ratelimit_requests_total has
// the error_type label on errors only, as the OpenTelemetry exporter writes it, which a
// checked collector cannot express.
package prommetrics
