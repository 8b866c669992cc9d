// Package distributed is the Redis backend of ratelimit: every instance of a service shares
// the same buckets, kept in Redis and decided there by one atomic Lua script per request.
// It works with any go-redis v9 client: a single node, Sentinel (redis.NewFailoverClient),
// Redis Cluster, or a Ring.
//
// # The algorithm
//
// Each bucket is one Redis string holding its theoretical arrival time (TAT), as in GCRA:
// with the interval T = 1/Rate and the tolerance τ = Burst·T, a request for n tokens at time
// now is allowed when max(TAT, now) + n·T − now ≤ τ, and the new TAT is stored only when it
// is. The script reads the clock with Redis TIME, so application servers' clocks never
// matter, and it counts time in tokens (a microsecond is worth Rate/10⁶ of one), so taking a
// token adds exactly one to the TAT at any rate. Answers are the same as the local backend's,
// to the microsecond; one conformance suite runs against both. WithAlgorithm selects another
// algorithm: FixedWindow and SlidingWindowCounter store "window:count" and
// "window:count:previous" on windows aligned to the Unix epoch (docs/redis.md).
//
// WithAlgorithm picks another script: ratelimit.SlidingWindowLog keeps a sorted set of
// microsecond times per bucket (slidinglog.lua, tag "swl"), ratelimit.LeakyBucket the same
// TAT as above plus each request's Delay (leakybucket.lua, tag "lb"); see docs/algorithms.md.
//
// # Keys
//
// A bucket is named by (key, limit.Rate, limit.Burst). Its Redis key is the prefix
// (WithPrefix, default "ratelimit:"), the caller's key, the algorithm's tag ("tb" for the
// token bucket, "fw" fixed window, "swc" sliding window counter), then the rate and the
// burst:
//
//	ratelimit:user:42:tb:10:20
//
// Any non-empty key works, including ones with colons, braces, NUL bytes or unicode. Each
// call touches one key, so Redis Cluster never answers CROSSSLOT; a key containing a hash
// tag ({…}) is placed by that tag, as Redis Cluster always does. A key expires once its
// bucket would be full again, so idle buckets cost Redis nothing. Keys may carry personal
// data (IP addresses, user IDs): hash them first if Redis must not hold it.
//
// # Limits
//
// Rates from one a day (or less) up to MaxRate, a million tokens per second, and bursts up
// to a billion decide exactly. Durations in a Result are whole microseconds, and stop at
// 2⁵³ µs (about 285 years). Higher rates are rejected with ratelimit.ErrInvalidLimit: Redis
// TIME counts microseconds. So are limits whose drained bucket would take longer than 2⁵³ µs
// to refill (Burst/Rate), with every algorithm, as on the local backend.
//
// # Throughput
//
// Decisions made at the same time share round trips. Eight at a time go to Redis on their
// own; one that arrives while all eight are on the wire waits in a queue, and the queue leaves
// as one pipeline as soon as one of them returns. Redis still runs one script per decision, in
// arrival order, so no answer changes; the client and Redis save the writes, reads and
// wake-ups that separate calls would cost, which under load is most of the work. A lone
// caller never waits for company. Queued decisions are sent with the limiter's deadline
// rather than the caller's context, and a decision whose context ends while it waits is
// withdrawn before Redis sees it. Clients that cannot pipeline (none of go-redis's) are
// called directly.
//
// # When Redis is slow or down
//
// New does not contact Redis, so a service starts while Redis is down. Every decision has a
// deadline (WithTimeout, default 50 ms); past it, or when Redis fails, AllowN returns an
// error and a Result with Allowed false, and the middleware's error policy decides whether
// the request goes on. Build the client with ContextTimeoutEnabled: true so go-redis itself
// stops waiting at the deadline; otherwise the limiter enforces it by waiting for each
// reply in a goroutine of its own.
//
// Wait is supported for ratelimit.LeakyBucket only, whose script reserves a place in the
// queue atomically; the other algorithms return ratelimit.ErrNotSupported. Close does not
// close the client.
package distributed
