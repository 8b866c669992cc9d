package fallback

import (
	"context"
	"math"
	"time"

	"github.com/sluice-go/ratelimit/internal/breaker"
	"github.com/sluice-go/ratelimit/priority"
)

// Defaults of the options.
const (
	// DefaultFailureThreshold is how many failures of the primary in a row open the
	// circuit breaker.
	DefaultFailureThreshold = breaker.DefaultThreshold
	// DefaultCooldown is how long the breaker stays open before a probe tries the primary again.
	// A probe to a primary still down costs its request up to the primary's deadline (50 ms for
	// distributed), so a shorter cooldown costs that to more requests; a longer one delays the
	// return to Redis after an outage by as much
	// (https://github.com/sluice-go/ratelimit/blob/main/docs/redis.md has the measured figures).
	DefaultCooldown = breaker.DefaultCooldown
	// DefaultDenialCacheSize caps the number of denials the cache holds: about 10 MB at
	// the cap, with short keys (and as many denied lists of AllowAll: 30 MB more at most, of
	// three requests each).
	DefaultDenialCacheSize = 1 << 16
	// DefaultDenialCacheTTL is the longest the denial cache answers for the primary after
	// one denial: how long a bucket reset or refunded through another instance, or lost by
	// Redis, can go on being denied here.
	DefaultDenialCacheTTL = time.Second
)

// Option configures a Limiter built by New.
type Option func(*options)

type options struct {
	instances int
	reserves  priority.Reserves
	threshold int32
	cooldown  time.Duration
	cacheSize int // negative: no cache
	cacheTTL  time.Duration
	onError   func(ctx context.Context, key string, err error)
	onState   []func(StateChange)
	clock     func() time.Time
}

func defaultOptions() options {
	return options{
		instances: 1,
		threshold: DefaultFailureThreshold,
		cooldown:  DefaultCooldown,
		cacheSize: DefaultDenialCacheSize,
		cacheTTL:  DefaultDenialCacheTTL,
	}
}

// WithInstances sets how many instances of the service are expected to share the limit,
// so that while the primary is unavailable each instance's secondary enforces its share:
// Limit{Rate: Rate/n, Burst: max(1, Burst/n), Warmup: Warmup, Algorithm: Algorithm}. Default: 1,
// the whole limit on every
// instance (n instances together then admit up to n times the limit).
//
// A request the real limit allows at its priority but that costs more than the share can
// give that priority (the share's burst less its reserve, WithReserves) takes all the
// share can give it: it passes when the share is full, rather than failing with
// ratelimit.ErrExceedsBurst, which tells clients never to retry. Such requests can then
// exceed the share, by at most one request per instance per Burst/Rate seconds. A request
// the real limit refuses as too costly is refused.
func WithInstances(n int) Option {
	return func(o *options) { o.instances = max(n, 1) }
}

// WithReserves tells the Limiter the priority reserves its limiters keep
// (local.WithReserves, distributed.WithReserves): give it the same value. It needs them
// only with WithInstances, to clamp a cost to the part of an instance's share left to the
// request's priority (see WithInstances); the secondary enforces the reserves itself.
// Default: the zero Reserves, the defaults, as on the backends. New panics on reserves
// that priority.Reserves.Validate refuses.
func WithReserves(r priority.Reserves) Option {
	return func(o *options) { o.reserves = r }
}

// WithFailureThreshold sets how many failures of the primary in a row open the circuit
// breaker. Default: DefaultFailureThreshold (5). A negative value turns the breaker off:
// every call then tries the primary first, and pays for its failure (up to the primary's
// deadline) before falling back.
func WithFailureThreshold(n int) Option {
	return func(o *options) { o.threshold = breaker.Threshold(n) }
}

// WithCooldown sets how long the circuit breaker stays open before one call, the probe,
// tries the primary again. Default: DefaultCooldown (250 ms). A negative value means the
// default too: a breaker without a cooldown would never try the primary again.
func WithCooldown(d time.Duration) Option {
	return func(o *options) { o.cooldown = breaker.Cooldown(d) }
}

// WithDenialCacheSize caps the number of buckets whose last denial the denial cache holds;
// see the package documentation for what the cache does. Default: DefaultDenialCacheSize
// (65,536). A negative value turns the cache off. The cache is split into 64 shards with a
// cap each, so the cap is n rounded down to a multiple of 64, and at least 64. At the cap, a
// new denial takes the place of an expired one, or of the one expiring first among a few
// sampled; a dropped denial only sends requests to the primary again. The denied lists of
// AllowAll are capped at n as well, apart.
func WithDenialCacheSize(n int) Option {
	return func(o *options) {
		if n == 0 {
			n = DefaultDenialCacheSize
		}
		o.cacheSize = n
	}
}

// WithDenialCacheTTL sets the longest the denial cache denies requests on the strength of
// one denial by the primary: until the denial's RetryAfter, but for no more than d after
// the denied request was sent. Resets and refunds made through this Limiter take effect at
// once; d bounds how long one made through another instance (or a bucket Redis lost) goes
// unseen, while each hammered, denied key costs a call to the primary every d. Default:
// DefaultDenialCacheTTL (1 s). A negative value removes the bound: a denial is served until
// its RetryAfter, which may be hours (PerDay limits).
func WithDenialCacheTTL(d time.Duration) Option {
	return func(o *options) {
		switch {
		case d == 0:
			d = DefaultDenialCacheTTL
		case d < 0:
			d = math.MaxInt64
		}
		o.cacheTTL = d
	}
}

// WithErrorHandler sets a function told of every failure of the primary, before the
// secondary decides in its place: an error from Redis, a deadline passed. It is not told of
// calls the open breaker keeps off the primary (StateChange reports those periods), nor of
// errors about the arguments. It runs on the caller's goroutine, so it should be quick:
// logging is fine. Default: none.
func WithErrorHandler(f func(ctx context.Context, key string, err error)) Option {
	return func(o *options) { o.onError = f }
}

// WithStateHook adds a function told of every change of the circuit breaker's state,
// such as Closed → Open when the primary has failed too often (decisions are degraded
// from then on) and HalfOpen → Closed when it has come back (recovered). While the primary
// stays down, each probe flips the breaker Open → HalfOpen → Open: a hook that logs should
// log only the changes for which StateChange.Edge is true, once per outage each way. The
// observers of this module offer one as their ObserveBreaker method
// (fallback.WithStateHook(metrics.ObserveBreaker)).
//
// Each WithStateHook adds a function; they are called in the order given, on the goroutine
// of the call that made the change, after the change, holding no lock; other calls go on
// meanwhile. Keep them quick, as slog is. A panic in one is recovered. A nil f is skipped.
// Default: none.
func WithStateHook(f func(StateChange)) Option {
	return func(o *options) {
		if f != nil {
			o.onState = append(o.onState, f)
		}
	}
}

// WithClock makes the Limiter read the time from now instead of the system's monotonic
// clock, for the breaker's cooldown and the denial cache's expiry, so that tests can move
// time by hand. Default: the system clock. A nil now means the default.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}
