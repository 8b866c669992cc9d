// Package fallback keeps rate limiting bounded, observable and useful when the shared
// limiter behind it (Redis, package distributed) is slow or down. It composes two
// ratelimit.Limiters: a primary, asked while it answers, and a secondary (typically
// in-process, package local) that decides in its place while it does not.
//
//	primary, _ := distributed.New(client)
//	secondary := local.New()
//	limiter := fallback.New(primary, secondary, fallback.WithInstances(4))
//
// The Limiter is itself a ratelimit.Limiter: hand it to ginmw.New or the grpcmw
// interceptors as any other. While the primary is healthy it answers exactly as the
// primary does.
//
// # Bounded latency
//
// Every call to the primary must end within a deadline of the primary's own (distributed's
// WithTimeout, 50 ms by default); this package adds none. What it bounds is how often that
// deadline is paid: once the breaker is open, calls do not wait for the primary at all.
//
// # Circuit breaker
//
// After WithFailureThreshold failures of the primary in a row (5 by default) the breaker
// opens: for WithCooldown (250 ms by default) the primary is not called and every decision
// comes from the secondary at once. Then the breaker is half-open: the next call, the probe,
// goes to the primary, and the others keep going to the secondary until the probe answers.
// Its success closes the breaker; its failure opens it for another cooldown. A probe that
// has not answered within a cooldown is handed on to the next call.
//
// Only failures count: errors about the arguments (ratelimit.ErrKeyEmpty,
// ErrInvalidLimit, ErrInvalidCost, ErrExceedsBurst, ErrNotSupported, ErrClosed) are
// answers, returned as they are, and so is context.Canceled when the caller's own context
// was canceled. A deadline that passed is a failure, whoever set it.
//
// The breaker needs a run of failures, not a failure ratio: under load, a run of five comes
// soon whenever a good share of calls fail (at a 50 % failure rate, within 62 calls on
// average), and a run keeps the hot path to one atomic load while closed.
//
// # Degrading to the secondary
//
// When the primary fails, or the breaker keeps calls off it, the secondary decides, under
// this instance's share of the limit (WithInstances(n): Rate/n, Burst/n rounded down, at
// least 1), so that n instances together admit about the limit instead of n times it. The
// Result then carries that share as its Limit. A request costing more than the share's burst
// takes the whole share, instead of failing with ratelimit.ErrExceedsBurst for a request the
// real limit allows.
//
// With a nil secondary, those calls fail with an error wrapping ErrUnavailable, and the
// middleware's error policy decides (fail open or closed): the breaker then spares requests
// the wait for a dead primary, and the denial cache still works.
//
// # Denial cache
//
// When the primary denies a request of one token on a bucket (key, Rate, Burst) with
// RetryAfter r, and the request was sent at local time t, the primary decided at some time
// between t and its answer, so the same request cannot conform before t + r: r is, by the
// ratelimit contract, the earliest time it would if nothing else used the bucket, and other
// traffic can only push that time later (for every algorithm: more traffic never frees
// capacity sooner). A request of one token can therefore be denied locally until t + r
// without asking the primary, and that denial is one the primary would give. Requests of
// more tokens always go to the primary: they would be denied too, but their RetryAfter, and
// how their Remaining grows meanwhile, depend on the algorithm, which only the primary knows.
// So does every request once the primary has admitted one on the bucket, which forgets the
// denial.
//
// The cache never admits anything. It can only deny what the primary would admit when the
// two clocks disagree on how long r lasts: the local monotonic clock against Redis's wall
// clock (slewed by at most 500 ppm under NTP: 0.5 ms on a 1 s RetryAfter) or a step of the
// Redis clock; or when Redis lost the bucket (a restart, a failover to a replica that had
// not received it), after which the cache keeps denying for what is left of r, which is at
// most Burst/Rate. The cached Result is the primary's, aged by the time since the request
// was sent, as if nothing else had used the bucket since: RetryAfter and ResetAfter shrink,
// and Remaining is 0, as in every denial of one token by every algorithm. When other
// instances use the bucket meanwhile, the true RetryAfter is longer, as it would be an
// instant after the primary's own answer.
//
// The cache is on by default: a hit costs well under a microsecond and allocates nothing,
// a miss adds less than that to a round trip to Redis of tens of microseconds, and it takes
// a hammered key off Redis almost entirely (see docs/benchmarks.md). Its size is capped
// (WithDenialCacheSize); entries expire when their denial does. Only the primary's denials
// are remembered, never the secondary's.
//
// # Hooks
//
// WithErrorHandler is told of each failure of the primary, WithStateHook of each change of
// the breaker's state (opened: degraded; closed: recovered), with the error that caused it.
// Both run on the goroutine of the call concerned, holding no lock, and StateChange logs
// well with log/slog (it is a slog.LogValuer and a fmt.Stringer):
//
//	fallback.WithStateHook(func(c fallback.StateChange) {
//		slog.Warn("rate limiter", "breaker", c)
//	})
//
// WithObserver reports the same changes to a ratelimit.Observer (otelmetrics,
// prommetrics, slogobserver). The Limiter is a ratelimit.OriginReporter: whoever reports
// its decisions learns which limiter made each, and which came from the denial cache.
//
// # Closing
//
// Close makes later calls fail with ratelimit.ErrClosed; it closes neither limiter, which
// belong to the caller. The Limiter starts no goroutine.
package fallback
