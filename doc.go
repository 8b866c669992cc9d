// Package ratelimit is a rate-limiting kit for Go services: one Limiter contract with an
// in-process backend and a Redis backend behind it, and the glue services need around it.
//
// A Limiter decides, for a key (a client address, a user ID, a route) and a Limit, whether a
// request may proceed, and returns a Result with what HTTP and gRPC responses report: how
// many requests remain, when to retry, when the bucket is full again. Being limited is not an
// error: an error means no decision was made, and errors.Is against the Err* values of this
// package tells why.
//
//	res, err := limiter.Allow(ctx, "user:42", ratelimit.PerMinute(100))
//	// err != nil: no decision (middleware fails open, or closed);
//	// !res.Allowed: retry after res.RetryAfter
//
// The package's Example handles each outcome.
//
// # Packages
//
//   - local: buckets in memory, for one instance or per-instance limits.
//   - distributed: buckets in Redis, one atomic Lua script per decision on the Redis clock,
//     shared by every instance. Both backends implement every Algorithm and give the same
//     answers to the same calls; one conformance suite checks it.
//   - fallback: the two together, for when Redis is slow or down.
//   - ginmw, httpmw, grpcmw: middleware for Gin, net/http and gRPC, one pipeline with the same
//     options and answers (https://github.com/sluice-go/ratelimit/blob/main/docs/middleware.md).
//   - keyfuncs, keyfuncs/httpkeys, keyfuncs/grpckeys: keys clients cannot forge.
//   - headers: Retry-After, X-RateLimit-* and the IETF RateLimit fields.
//
// # Conventions
//
// These hold across the module, and the packages do not repeat them:
//
//   - Options: the zero value, or a nil function, means the default; where a feature can be
//     turned off, an explicit value does it (a negative duration or size, headers.StyleNone);
//     a nil Option is skipped.
//   - Constructors report a mistake in their arguments the way their signature allows:
//     distributed.New returns an error; the others, which return no error, panic, as for a
//     nil limiter or a fixed limit the backend rejects. Nothing panics on a request path.
//   - Errors start with the name of the package that made them ("distributed: …") and wrap
//     the Err* values of this package; no error, status message or header carries a key,
//     which may be personal data.
//   - Capabilities beyond Limiter (MultiLimiter, Inspector, LimitValidator) are found with
//     As, through any wrapper; a wrapper has one only when what it wraps does.
//   - Time: the in-process parts read the monotonic clock unless given one (local.WithClock,
//     fallback.WithClock: simulations, replays, tests); the Redis backend reads Redis's
//     clock, by design, and has no such option.
//
// # Priorities
//
// A request can carry a priority in its context (package priority): Critical, the default,
// Normal or Sheddable. A limiter keeps part of each bucket (priority.Reserves) back from the
// lower priorities,
// so that a flood of sheddable requests cannot spend the tokens critical ones need;
// https://github.com/sluice-go/ratelimit/blob/main/docs/algorithms.md#priority-reserves has
// the rule and the defaults.
//
// # Observing
//
// Package observe reports every decision to an Observer: the middlewares take one
// (WithObserver), and observe.Wrap wraps a Limiter called directly. Packages otelmetrics,
// prommetrics (a module of its own) and slogobserver implement it.
//
// This package imports only the standard library.
package ratelimit
