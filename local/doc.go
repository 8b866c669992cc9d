// Package local is the in-process backend of ratelimit: buckets held in memory, so that a
// decision is a lookup and, for the usual limits, one atomic compare-and-swap, and nothing
// leaves the process. Use it for a single instance, or to limit each instance on its own in
// front of a shared Redis limit.
//
// Every algorithm answers exactly as the Redis backend does, to the microsecond. The token
// bucket (the default) is GCRA with the Redis script's arithmetic: a bucket is its theoretical
// arrival time, counted in tokens on a microsecond clock. golang.org/x/time/rate decides
// alike, to within a microsecond's rounding at exact boundaries; this package's tests hold the
// two side by side. The fixed and sliding window counters keep one or two counts per bucket,
// on windows aligned to the Unix epoch; ratelimit.SlidingWindowLog keeps a ring of microsecond
// times per bucket (8 bytes per token of the window, up to 10,000), and
// ratelimit.LeakyBucket a GCRA schedule that also gives each request its Delay, for which Wait
// joins the queue, and ratelimit.CalendarQuota a count and its period, computed in the
// period's zone once per period (see
// https://github.com/sluice-go/ratelimit/blob/main/docs/algorithms.md).
//
// Options follow one rule: zero means the default, a negative value turns off what can be
// turned off (the sweep, the idle wait), and a nil Option is skipped.
//
// # Buckets
//
// A bucket is named by (key, limit): changing the limit a key is checked against (its rate,
// burst or warm-up) starts a fresh, full bucket. Buckets are created on first use and found without
// a lock, in an index split into shards so that goroutines creating buckets for different keys
// rarely share one; looking a bucket up allocates nothing. A token bucket up to 10⁶ tokens a
// second, and a window counter whose window index and counts fit in 64 bits, decide with one
// compare-and-swap; the other buckets, token buckets with a warm-up among them, decide under
// a mutex of their own. The clock is read in whole microseconds, so a token bucket must hold
// a microsecond's tokens (Burst ≥ Rate/10⁶): ValidateLimit and every call refuse a faster
// one with ratelimit.ErrInvalidArgument, math.MaxFloat64 (x/time/rate's Inf) included.
//
// # Several limits at once, and priorities
//
// Limiter is a ratelimit.MultiLimiter and a ratelimit.Inspector: AllowAll decides a list of
// limits all or nothing, holding their buckets in a fixed order while it decides (no global
// lock), and Peek, Refund and Reset read and adjust one bucket, with the Redis backend's
// answers (see https://github.com/sluice-go/ratelimit/blob/main/docs/limits.md). A request
// whose context carries a priority.Level below Critical leaves a reserve of its bucket to
// the higher ones (WithReserves; see
// https://github.com/sluice-go/ratelimit/blob/main/docs/algorithms.md#priority-reserves).
//
// # Memory
//
// A goroutine started by New drops buckets that have been full for a while
// (WithCleanupInterval, WithIdleTimeout): only full ones, since a dropped bucket comes back
// full. The number of buckets is capped (WithMaxBuckets, which says what happens at the cap:
// a flood of new keys is itself rate limited, and keys already tracked are unaffected).
//
// # Time
//
// The limiter reads the monotonic clock, in whole microseconds, from the wall time New read,
// which testing/synctest's fake clock moves. WithClock gives it a clock of your own: to replay
// a trace of traffic or simulate one (the plots of
// https://github.com/sluice-go/ratelimit/blob/main/docs/algorithms.md are made so), or for
// tests. Close stops the sweep goroutine; calls after Close return ratelimit.ErrClosed.
package local
