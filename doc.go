// Package ratelimit is a rate-limiting kit for Go services: one Limiter contract with an
// in-process backend and a Redis backend behind it, and the glue services need around it.
//
// # The contract
//
// A Limit is a token bucket: Rate tokens per second, up to Burst. A Limiter decides, for a
// key (a client IP, a user ID, a route) and a Limit, whether a request may proceed, and
// returns a Result with what HTTP and gRPC responses report: how many requests remain, when
// to retry, when the bucket is full again.
//
//	res, err := limiter.Allow(ctx, "user:42", ratelimit.PerMinute(100))
//	switch {
//	case err != nil:
//		// The limiter could not decide (bad input, Redis down): see ErrorPolicy.
//	case !res.Allowed:
//		// Limited: answer 429 with a Retry-After of res.RetryAfter.
//	}
//
// Being limited is not an error. An error means no decision was made, and its cause can be
// told with errors.Is against the Err* values of this package.
//
// # Backends
//
//   - [github.com/sluice-go/ratelimit/local]: in memory, one golang.org/x/time/rate limiter
//     per bucket; for one instance, or per-instance limits.
//   - [github.com/sluice-go/ratelimit/distributed]: in Redis, one atomic Lua script per
//     decision on the Redis clock, shared by every instance.
//
// Both give the same answers to the same sequence of calls; one conformance suite checks it.
// [github.com/sluice-go/ratelimit/fallback] composes the two for when Redis is slow or
// down: a circuit breaker, local limits while Redis is away, and a cache of Redis's denials.
//
// # Around the limiter
//
//   - [github.com/sluice-go/ratelimit/ginmw]: Gin middleware (429 with Retry-After, rate-limit
//     headers, fail open or closed); see Example_gin.
//   - [github.com/sluice-go/ratelimit/grpcmw]: gRPC interceptors, unary and stream, server and
//     client (ResourceExhausted with RetryInfo, QuotaFailure and the retry pushback trailer);
//     see Example_grpc.
//   - [github.com/sluice-go/ratelimit/keyfuncs] and its grpckeys subpackage: keys that
//     clients cannot forge (socket peer unless proxies are trusted), users, routes, methods.
//   - [github.com/sluice-go/ratelimit/headers]: Retry-After, X-RateLimit-* and the IETF
//     draft's RateLimit and RateLimit-Policy fields, as pure functions.
//
// # Observing
//
// Every decision can be reported to an Observer, as a Decision: policy, backend, outcome,
// error kind (ClassifyError), shadow, cost, remaining, limit and duration, never the key.
// Observe wraps a Limiter called directly; Observers composes several and recovers their
// panics. [github.com/sluice-go/ratelimit/otelmetrics] (OpenTelemetry),
// github.com/sluice-go/ratelimit/prommetrics (Prometheus, a module of its own) and
// [github.com/sluice-go/ratelimit/slogobserver] (log/slog) implement it; docs/observability.md
// has the instruments, queries and alerts.
//
// # Semantics
//
// A bucket is named by (key, Rate, Burst), so a new limit for a key starts a fresh bucket.
// A new bucket starts full. Taking n tokens is all or nothing: a denial takes nothing. With
// Rate 1/s and Burst 2, three requests at once see two allowed (Remaining 1, then 0) and the
// third denied with RetryAfter 1 s; 1.4 s later one more is allowed, with Remaining 0.
//
// This package imports only the standard library.
package ratelimit
