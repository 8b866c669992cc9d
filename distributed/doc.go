// Package distributed is the Redis backend of ratelimit: every instance of a service shares
// the same buckets, kept in Redis and decided there by one atomic Lua script per request, on
// the Redis clock (or, with WithClientClock, for hosts that refuse TIME in scripts, this
// process's). It works with any go-redis v9 client: a single node, Sentinel
// (redis.NewFailoverClient), Redis Cluster, or a Ring; and with Valkey as with Redis.
//
// Every algorithm is one script on one key, and decides as the local backend does, to the
// microsecond (one conformance suite runs against both). The token bucket (the default) stores
// its theoretical arrival time, as GCRA does;
// https://github.com/sluice-go/ratelimit/blob/main/docs/algorithms.md has the arithmetic of
// each algorithm, and https://github.com/sluice-go/ratelimit/blob/main/docs/redis.md the key
// layout, the expiry and the operations.
//
// # Keys
//
// A bucket is named by (key, limit). Its Redis key is the prefix (WithPrefix), the caller's
// key, the algorithm's tag ("tb" token bucket, "fw" fixed window, "swc" sliding window
// counter, "swl" sliding window log, "lb" leaky bucket, "tbw" token bucket with a warm-up,
// "cq" calendar quota), the rate and the burst, for "tbw" the warm-up in microseconds, and
// for "cq" the period:
//
//	ratelimit:user:42:tb:10:20
//	ratelimit:user:42:tbw:10:20:30000000
//	ratelimit:user:42:cq:0:10000:day@Europe/Paris
//
// A calendar quota's periods come from this process's time zone database (import
// time/tzdata where the system has none): the limiter sends the period holding its clock
// and the two beside it, and the script decides in the one that holds the Redis clock.
//
// Each call touches one key, so Redis Cluster never answers CROSSSLOT; a key containing a
// hash tag ({…}) is placed by that tag. A key expires once its bucket would be full again.
// Keys may carry personal data: hash them first (keyfuncs.Hashed) if Redis must not hold it.
//
// # Limits and throughput
//
// Rates up to MaxRate (10⁶ a second, the resolution of Redis TIME) and bursts up to
// 2^52 decide exactly; durations stop at 2⁵³ µs (285 years), and a limit
// whose drained bucket would take longer to refill (Burst/Rate) is refused, with every
// algorithm, as on the local backend. Decisions made at
// the same time share round trips: eight at a time go to Redis on their own, and the ones
// that arrive meanwhile leave together as one pipeline when one of the eight returns. Redis
// still runs one script per decision, in arrival order; a lone caller never waits.
//
// # Priorities
//
// A request whose context carries a priority below priority.Critical (priority.With,
// or a middleware's WithPriorityFunc) leaves a reserve of its bucket to the higher ones
// (WithReserves; by default a tenth of the burst for Normal requests, half for Sheddable
// ones): every script decides it as under a burst less that reserve, while the bucket and its
// key stay the same. A request that carries none is Critical and decided as always. See
// https://github.com/sluice-go/ratelimit/blob/main/docs/algorithms.md#priority-reserves.
//
// # When Redis is slow or down
//
// New does not contact Redis, so a service starts while Redis is down. Every decision has a
// deadline (WithTimeout); past it, AllowN returns an error wrapping ratelimit.ErrTimeout, and
// the caller's error policy, or package fallback, decides. Build the client with
// ContextTimeoutEnabled: true so go-redis itself stops waiting at the deadline; otherwise the
// limiter waits for each reply in a goroutine of its own. Wait works with
// ratelimit.LeakyBucket, whose script reserves a place in the queue atomically, and with
// ratelimit.TokenBucket, which books its slot with Reserve (see Limiter.Reserve).
package distributed
