package distributed

import (
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// Defaults of the options.
const (
	// DefaultPrefix starts every key the limiter writes to Redis.
	DefaultPrefix = "ratelimit:"
	// DefaultTimeout bounds each decision's round trip to Redis.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultMaxSkew is the bound on the skew between the hosts' clocks that
	// WithClientClock(0) assumes.
	DefaultMaxSkew = time.Second
)

// Option configures a Limiter built by New.
type Option func(*options)

type options struct {
	prefix    string
	timeout   time.Duration
	algorithm ratelimit.Algorithm
	crossSlot CrossSlot
	reserves  priority.Reserves
	now       func() time.Time // the client clock, or nil for Redis TIME (WithClientClock)
	skew      time.Duration    // the client clock's skew bound
}

func defaultOptions() options {
	return options{prefix: DefaultPrefix, timeout: DefaultTimeout, algorithm: ratelimit.TokenBucket}
}

// WithPrefix sets the string every Redis key of the limiter starts with. Default:
// DefaultPrefix ("ratelimit:"); the empty prefix means the default. Give each application
// sharing a Redis its own prefix. A
// prefix containing a Redis Cluster hash tag ("{…}") sends every bucket to one slot, and so
// to one node: leave braces out unless that is what you want.
func WithPrefix(p string) Option {
	return func(o *options) {
		if p == "" {
			p = DefaultPrefix
		}
		o.prefix = p
	}
}

// WithTimeout bounds each decision: the limiter gives up on Redis after d, or at the
// caller's deadline if that comes first. Default: DefaultTimeout (50 ms), about a hundred
// times a healthy round trip inside a data centre, so that a dead or stalled Redis costs a
// request that long and no more. Zero means the default; a negative value removes the
// limiter's own bound: only the caller's context (and the client's own timeouts) apply.
// Errors from this bound wrap ratelimit.ErrTimeout and name the client's last dial error,
// if its last dial failed ("connection refused", "no such host"), which the deadline would
// hide; when the caller's context ends first, the error is the context's. (A caller
// canceled while its call waits for a connection of the client's pool is answered at the
// bound: the cancellation is not propagated into the call, which would cost every decision
// a cancel context and a channel of its own.)
//
// The bound is the socket's deadline, exactly. A call that waits elsewhere (in the
// limiter's queue, for the client's pool, on a client that ignores deadlines) sees it pass
// at most a sixteenth of d, and at most 1 ms, late: the calls whose bounds are that close
// share one timer.
//
// The bound holds whatever the client's settings. Clients built with
// ContextTimeoutEnabled: true honour it themselves; with any other client the limiter
// stops waiting at the bound and leaves the call to finish in the background, which costs a
// goroutine per call (see New). A Cluster client's first load of its map of the slots
// ignores the context while it retries a seed that cannot be reached: until the client has
// answered once, the limiter waits for its calls in that way too, so that the first
// decisions fail at the bound rather than hundreds of milliseconds later. Limiter.Check
// loads the map at start-up.
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if d == 0 {
			d = DefaultTimeout
		}
		o.timeout = max(d, 0)
	}
}

// WithAlgorithm sets the default algorithm: the one that decides the limits that name none
// (ratelimit.Limit.Algorithm); a limit naming another is decided by its own, under its own
// key. Default: ratelimit.TokenBucket, which ratelimit.DefaultAlgorithm also means. A limit
// naming the default and the same limit naming none are one key. This backend implements
// all five, each as one Lua script on one key: TokenBucket (GCRA, key tag "tb"); FixedWindow
// ("fw") and SlidingWindowCounter ("swc"), which count per window of W = Burst/Rate aligned to
// the Unix epoch; SlidingWindowLog ("swl"), the exact log of admissions in a sorted set (Burst
// at most 10,000); and LeakyBucket ("lb"), a shaper (Result.Delay), the only
// algorithm for which Wait is supported. A token bucket limit with a warm-up
// (ratelimit.Limit.Warmup) runs a script of its own, tag "tbw"; the other algorithms refuse
// a warm-up with ratelimit.ErrNotSupported. Every algorithm decides as the local backend does.
// With ratelimit.CalendarQuota, whose period is its limits', every call under a limit that
// names no algorithm returns ratelimit.ErrNotSupported; New fails on a value that is none of
// the constants. Every algorithm refuses,
// with ratelimit.ErrInvalidArgument, a limit whose Burst/Rate is longer than 2⁵³ µs, and the
// window algorithms one whose window is shorter than 1 µs.
func WithAlgorithm(a ratelimit.Algorithm) Option {
	return func(o *options) {
		if a == ratelimit.DefaultAlgorithm {
			a = ratelimit.TokenBucket
		}
		o.algorithm = a
	}
}

// CrossSlot is what AllowAll does with requests whose keys live in different hash slots of a
// Redis Cluster (or a Ring): see WithCrossSlot.
type CrossSlot int

const (
	// CrossSlotGroups decides the keys of each hash slot atomically, one script per slot, slots
	// in ascending order, and gives back what the earlier slots took when a later one denies. It
	// never admits more than the limits allow; a concurrent caller may see a transient denial
	// while tokens wait to be given back
	// (https://github.com/sluice-go/ratelimit/blob/main/docs/limits.md#redis-cluster-keys-in-different-slots).
	CrossSlotGroups CrossSlot = iota
	// CrossSlotRefuse makes AllowAll return an error wrapping ErrCrossSlot, having
	// taken nothing, for keys in different hash slots.
	CrossSlotRefuse
)

// WithCrossSlot sets what AllowAll does with keys in different hash slots on a Redis Cluster
// or Ring. Default: CrossSlotGroups. Keys that carry the same hash tag ("{user:42}:second",
// "{user:42}:hour") share a slot and are always decided by one script, atomically; so are
// all keys on a single server or behind Sentinel, where this option changes nothing.
func WithCrossSlot(c CrossSlot) Option {
	return func(o *options) { o.crossSlot = c }
}

// WithReserves sets how much of each bucket requests of a lower priority leave for the
// higher ones (priority.Level, read from each call's context). Default: the zero
// priority.Reserves, which are the defaults: a tenth of the burst kept back from
// priority.Normal requests, half from priority.Sheddable ones; a negative fraction turns
// a reserve off. Requests whose context carries no priority are priority.Critical and keep
// nothing back, so this option changes nothing for them. New returns an error wrapping
// ratelimit.ErrInvalidArgument for reserves that priority.Reserves.Validate refuses. See
// https://github.com/sluice-go/ratelimit/blob/main/docs/algorithms.md#priority-reserves.
func WithReserves(r priority.Reserves) Option {
	return func(o *options) { o.reserves = r }
}

// WithClientClock makes the scripts take the time from this process's clock, passed as an
// argument, instead of Redis TIME: for hosts that refuse TIME inside scripts. Default: off,
// the Redis clock, which needs no agreement between application servers and should be kept
// wherever the host allows it. maxSkew bounds how far apart the clocks of every host sharing
// the buckets may be; zero means DefaultMaxSkew (1 s), and a negative value turns the option
// off. The bound costs and buys this much, per bucket: a key outlives its state by maxSkew,
// so that a host whose clock is behind still finds it; and a host whose clock is d ahead of
// another's sees a bucket refilled d early, so that it may admit up to Rate·d tokens more
// than the limit (d <= maxSkew), and sees a window or a quota's period start d early. Keep
// the hosts on NTP. A calendar quota's periods are computed on the same clock.
func WithClientClock(maxSkew time.Duration) Option {
	return func(o *options) {
		switch {
		case maxSkew < 0:
			o.now, o.skew = nil, 0
		default:
			if maxSkew == 0 {
				maxSkew = DefaultMaxSkew
			}
			o.now, o.skew = time.Now, maxSkew
		}
	}
}
