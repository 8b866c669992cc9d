// Package fallback keeps rate limiting bounded, observable and useful when the shared
// limiter behind it (Redis, package distributed) is slow or down. It composes two
// ratelimit.Limiters: a primary, asked while it answers, and a secondary (typically
// in-process, package local) that decides in its place while it does not.
//
//	primary, _ := distributed.New(client)
//	limiter := fallback.New(primary, local.New(), fallback.WithInstances(4))
//
// ExampleNew shows it whole, with the client settings and the logging that go with it.
//
// The Limiter is itself a ratelimit.Limiter, for any middleware. While the primary is
// healthy it answers exactly as the primary does. Every call to the primary ends within the
// primary's own deadline (distributed's WithTimeout); what this package bounds is how often
// that deadline is paid: once the breaker is open, calls do not wait for the primary at all.
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
// Only failures of the primary count: its own deadline (ratelimit.ErrTimeout) and its
// errors talking to Redis (observe.Classify's KindTimeout and KindUnavailable). Errors
// about the arguments or one bucket (KindInvalidInput: ratelimit.ErrInvalidArgument,
// ErrInvalidLimit, ErrInvalidRequest, distributed.ErrCrossSlot and the others) and ErrClosed are
// answers, returned as they are; so is any error of a call
// whose own context has ended, so that clients giving up early, or sending deadlines too
// short for any backend, cannot open the breaker for everyone. The breaker needs a run of
// failures, not a ratio: under load a run of five comes soon whenever a good share of calls
// fail, and a run keeps the hot path to one atomic load while closed.
//
// # Degrading to the secondary
//
// When the primary fails, or the breaker keeps calls off it, the secondary decides, under
// this instance's share of the limit (WithInstances(n): Rate/n, Burst/n rounded down, at
// least 1), so that n instances together admit about the limit instead of n times it. The
// Result then carries that share as its Limit. A request the real limit allows at its
// priority.Level but costing more than the share can give that priority (its burst less
// the priority's reserve, WithReserves) takes all the share can give it, instead of failing
// with ratelimit.ErrExceedsBurst, which tells clients never to retry.
//
// With a nil secondary, those calls fail with an error wrapping ErrUnavailable, and the
// middleware's error policy decides (fail open or closed): the breaker then spares requests
// the wait for a dead primary, and the denial cache still works.
//
// # Denial cache
//
// When the primary denies a request of one token with RetryAfter r, the same request (one
// token, at the same priority.Level) cannot conform before r has passed (other traffic
// only pushes that time later), so the cache denies it locally until then, without asking
// the primary: a denial the primary would give. A request of another priority, which keeps
// another reserve, goes to the primary, as do requests of more tokens (their RetryAfter
// depends on the algorithm, which only the primary knows) and every request once the
// primary has admitted one on the bucket.
//
// The cache never admits anything. It can deny what the primary would admit only when the
// two clocks disagree on how long r lasts (the local monotonic clock against Redis's, which
// NTP slews by at most 500 ppm, or a step of Redis's clock), or when the bucket was reset
// elsewhere or lost by Redis (a restart, a failover); every such case is bounded by the
// cache's TTL. A cached denial is the primary's Result aged by the time since its request
// was sent: RetryAfter and ResetAfter shrink, Remaining is 0.
//
// AllowAll (the ratelimit.MultiLimiter As gives) remembers a denied list of requests the
// same way, when its binding request (ratelimit.MultiResult.Binding) is of one token: the
// same list (keys, limits and costs, in order, at the same priority) is denied again without
// asking the primary, charging nothing, while that denial lasts and no bucket of the list
// has been charged, reset or refunded through the Limiter since. Every Result is the
// primary's, aged: until another denied request's RetryAfter ends, or an admitted one's
// ResetAfter (a window rolls over, a bucket is full), when the primary is asked again. An
// admitted request's Remaining is the primary's at the denial, exact for a fixed window; a
// bucket that refills by fractions may have gained a token meanwhile, and one charged
// through another instance lost some, both for at most the cache's TTL.
//
// The cache is on by default (WithDenialCacheSize caps it, or turns it off): a hit costs
// well under a microsecond and allocates nothing, and it takes a hammered key off Redis
// almost entirely (https://github.com/sluice-go/ratelimit/blob/main/docs/performance.md#fallback).
// Entries expire when their denial does, or sooner, a second after the denied request by
// default (WithDenialCacheTTL); only the primary's denials are remembered. A Reset or a
// Refund through the Limiter wins over every denial decided before it, even one answered
// after it; one made through another instance goes unseen here for at most that TTL.
//
// # Hooks
//
// WithErrorHandler is told of each failure of the primary, WithStateHook of each change of
// the breaker's state (opened: degraded; closed: recovered), with the error that caused it.
// Both run on the goroutine of the call concerned, holding no lock, and StateChange logs
// well with log/slog (it is a slog.LogValuer and a fmt.Stringer). During an outage each
// probe flips the breaker open → half-open → open; StateChange.Edge picks out the outage's
// start and end, as ExampleNew logs them.
//
// The observers of otelmetrics, prommetrics and slogobserver count or log the same changes:
// pass their ObserveBreaker method to WithStateHook, which may be given more than once. The
// Limiter is an observe.OriginReporter: whoever reports its decisions learns which limiter
// made each, and which came from the denial cache.
//
// Close makes later calls fail with ratelimit.ErrClosed; it closes neither limiter, which
// belong to the caller. The Limiter starts no goroutine.
package fallback
