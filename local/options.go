package local

import (
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// Defaults of the options.
const (
	// DefaultCleanupInterval is how often idle buckets are swept away.
	DefaultCleanupInterval = time.Minute
	// DefaultIdleTimeout is how long a bucket must have been full before a sweep drops it.
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultMaxBuckets caps the number of buckets a Limiter holds: about 86 MB of memory at the
	// cap, the keys' own bytes aside (see
	// https://github.com/sluice-go/ratelimit/blob/main/docs/performance.md#local-backend for the
	// measured cost of a bucket).
	DefaultMaxBuckets = 1 << 20
)

// Option configures a Limiter built by New.
type Option func(*options)

type options struct {
	cleanupInterval time.Duration
	idleTimeout     time.Duration
	maxBuckets      int
	clock           func() time.Time
	algorithm       ratelimit.Algorithm
	reserves        priority.Reserves
}

func defaultOptions() options {
	return options{
		cleanupInterval: DefaultCleanupInterval,
		idleTimeout:     DefaultIdleTimeout,
		maxBuckets:      DefaultMaxBuckets,
		algorithm:       ratelimit.TokenBucket,
	}
}

// WithCleanupInterval sets how often the background sweep drops idle buckets. Default:
// DefaultCleanupInterval (1 minute), which zero also means. A negative value turns the sweep
// off, and no goroutine is started; buckets then leave only to make room at the cap
// (WithMaxBuckets).
func WithCleanupInterval(d time.Duration) Option {
	return func(o *options) {
		if d == 0 {
			d = DefaultCleanupInterval
		}
		o.cleanupInterval = d
	}
}

// WithIdleTimeout sets how long a bucket must have been full, with no request taking a token
// from it, before a sweep drops it. Default: DefaultIdleTimeout (5 minutes), which zero also
// means. A negative value turns the wait off: a sweep drops every bucket it finds full. Only
// full buckets are dropped, because a dropped bucket comes back full: dropping one that was
// still refilling would let its key through sooner than keeping it.
func WithIdleTimeout(d time.Duration) Option {
	return func(o *options) {
		switch {
		case d == 0:
			d = DefaultIdleTimeout
		case d < 0:
			d = 0
		}
		o.idleTimeout = d
	}
}

// WithMaxBuckets caps the number of buckets the limiter holds, so that a flood of distinct
// keys (spoofed or random client IPs, say) cannot exhaust memory. Default: DefaultMaxBuckets
// (1,048,576), which zero and negative values also mean: the cap cannot be turned off. The
// buckets are split into 64 shards with a cap each, so the cap is n rounded down to a
// multiple of 64, and at least 64.
//
// At the cap, a new key first takes the place of a full bucket, found by sampling a few
// buckets; dropping a full bucket changes no decision. When every sampled bucket is still
// refilling, the new key is limited by an overflow bucket that all such keys with the same
// limit share. Keys already tracked keep their own buckets. Traffic is never admitted
// unlimited: under a key flood, new keys together get one limit's worth of requests until
// buckets refill and make room.
func WithMaxBuckets(n int) Option {
	return func(o *options) {
		if n < 1 {
			n = DefaultMaxBuckets
		}
		o.maxBuckets = n
	}
}

// WithAlgorithm sets the default algorithm: the one that decides the limits that name none
// (ratelimit.Limit.Algorithm); a limit naming another is decided by its own, its own
// bucket. Default: ratelimit.TokenBucket, which ratelimit.DefaultAlgorithm also means. This
// backend implements all five: TokenBucket, GCRA, deciding as golang.org/x/time/rate does;
// FixedWindow and SlidingWindowCounter, which count per window of W = Burst/Rate aligned to
// the Unix epoch; SlidingWindowLog, the exact log of admissions (Burst at most
// 10,000); and LeakyBucket, a shaper (Result.Delay, and Wait holds a place in
// its queue), at most 10⁶ requests a second. Only the token bucket takes a limit with a
// warm-up (ratelimit.Limit.Warmup, at most 10⁶ a second); the others refuse it with
// ratelimit.ErrNotSupported. Every algorithm decides as the Redis backend does, to the
// microsecond, on the limits both accept. With ratelimit.CalendarQuota, whose period is its
// limits', every call under a limit that names no algorithm returns
// ratelimit.ErrNotSupported; New panics on a value that is none of the constants. The
// window algorithms also refuse, with
// ratelimit.ErrInvalidArgument, a limit whose window is shorter than 1 µs or longer than 2⁵³ µs.
func WithAlgorithm(a ratelimit.Algorithm) Option {
	return func(o *options) {
		if a == ratelimit.DefaultAlgorithm {
			a = ratelimit.TokenBucket
		}
		o.algorithm = a
	}
}

// WithClock makes the limiter read the time from now instead of the system's monotonic
// clock: to replay or simulate traffic, or to move time by hand in tests. Default: the
// system clock. Wait still sleeps on real timers, so a test of Wait should move now forward
// as real (or synctest) time passes. A nil now means the default.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}

// WithReserves sets how much of each bucket requests of a lower priority leave for the
// higher ones (priority.Level, read from each call's context), as
// distributed.WithReserves does, with the same answers. Default: the zero
// priority.Reserves, which are the defaults: a tenth of the burst kept back from
// priority.Normal requests, half from priority.Sheddable ones; a negative fraction turns a
// reserve off. Requests whose context carries no priority are priority.Critical and keep
// nothing back. New panics on reserves that priority.Reserves.Validate refuses. See
// https://github.com/sluice-go/ratelimit/blob/main/docs/algorithms.md#priority-reserves.
func WithReserves(r priority.Reserves) Option {
	return func(o *options) { o.reserves = r }
}
