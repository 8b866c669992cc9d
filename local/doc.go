// Package local is the in-process backend of ratelimit: each bucket is a
// golang.org/x/time/rate limiter held in memory, so decisions cost a map lookup and a lock,
// and nothing leaves the process. Use it for a single instance, or to limit each instance
// on its own in front of a shared Redis limit. WithAlgorithm picks another algorithm per
// limiter; the fixed and sliding window counters (FixedWindow, SlidingWindowCounter) keep one
// or two counts per bucket, on windows aligned to the Unix epoch, and answer exactly as the
// Redis backend does.
//
// WithAlgorithm picks the algorithm: ratelimit.SlidingWindowLog keeps a ring of microsecond
// times per bucket (8 bytes per token of the window, up to ratelimit.MaxLogBurst), and
// ratelimit.LeakyBucket a GCRA schedule that also gives each request its Delay, for which
// Wait joins the queue (see docs/algorithms.md).
//
// # Buckets
//
// A bucket is named by (key, limit.Rate, limit.Burst): changing the limit a key is checked
// against starts a fresh, full bucket. Buckets are created on first use and live in a map
// split into shards, so goroutines working on different keys rarely share a lock, and
// looking a bucket up allocates nothing.
//
// # Memory
//
// A goroutine started by New sweeps the map every minute and drops buckets that have been
// full for five minutes (WithCleanupInterval, WithIdleTimeout). Only full buckets are ever
// dropped: a dropped bucket comes back full, so dropping a full one changes no decision,
// while dropping one that is still refilling would let its key through early.
//
// The number of buckets is capped (WithMaxBuckets). At the cap a new key takes the place of
// a full bucket if a small sample finds one; otherwise it is limited by an overflow bucket
// shared by all such keys with the same limit. A flood of distinct keys therefore costs
// bounded memory and is itself rate limited, and keys already tracked are unaffected.
//
// # Time
//
// The limiter reads the monotonic clock; WithClock replaces it for tests. Close stops the
// sweep goroutine; a Limiter must not be used after Close (calls return
// ratelimit.ErrClosed).
package local
