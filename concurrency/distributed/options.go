package distributed

import (
	"fmt"
	"time"
)

// Defaults of the options.
const (
	// DefaultPrefix starts every key the limiter writes to Redis.
	DefaultPrefix = "concurrency:"
	// DefaultTTL is a permit's lease: how long a permit outlives a holder that stopped
	// renewing it (a crash, a lost network).
	DefaultTTL = 10 * time.Second
	// DefaultTimeout bounds each round trip to Redis.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultPoll is the safety net of a waiting Acquire: how often the first waiter of a
	// key asks again when no wake-up came.
	DefaultPoll = time.Second
	// DefaultQueueLimit is how many callers of a limiter may wait for one key at once.
	DefaultQueueLimit = 1000
)

// OnFailure is what Acquire and TryAcquire do when Redis cannot answer (it timed out, the
// connection failed): see WithOnFailure.
type OnFailure int

const (
	// Degrade grants the permit from this instance's share of max, counted in the
	// process: max/instances, rounded down, at least 1 (WithInstances). The fleet then
	// admits about max while Redis is away, never an unlimited number.
	Degrade OnFailure = iota
	// ReturnError returns the first failure's error at once (wrapping ratelimit.ErrTimeout
	// or the client's), for the caller to decide: package concurrency/fallback's breaker,
	// or a middleware's error policy, which under FailOpen runs the request without a
	// permit.
	ReturnError
)

// String returns "Degrade" or "ReturnError".
func (f OnFailure) String() string {
	switch f {
	case Degrade:
		return "Degrade"
	case ReturnError:
		return "ReturnError"
	}
	return fmt.Sprintf("OnFailure(%d)", int(f))
}

// Option configures a Limiter built by New. A nil Option is skipped.
type Option func(*options)

type options struct {
	prefix    string
	ttl       time.Duration
	timeout   time.Duration
	poll      time.Duration
	queue     int
	onFailure OnFailure
	instances int // 0: counted in Redis
}

func defaultOptions() options {
	return options{
		prefix:  DefaultPrefix,
		ttl:     DefaultTTL,
		timeout: DefaultTimeout,
		poll:    DefaultPoll,
		queue:   DefaultQueueLimit,
	}
}

// WithPrefix sets the string every Redis key of the limiter starts with. Default:
// DefaultPrefix ("concurrency:"), which the empty prefix also means; it differs from
// package distributed's "ratelimit:", so that a rate limit's key and a concurrency limit's
// never meet. The key named by the prefix alone counts the fleet's limiters
// (WithInstances). A prefix containing a Redis Cluster hash tag ("{…}") sends every key to
// one slot, and so to one node.
func WithPrefix(p string) Option {
	return func(o *options) {
		if p == "" {
			p = DefaultPrefix
		}
		o.prefix = p
	}
}

// WithTTL sets each permit's lease, rounded down to the microsecond. The limiter renews
// the leases of the permits it holds every third of it, so a held permit never expires
// while its process runs and reaches Redis; a process that dies, or cannot reach Redis,
// keeps its permits until their leases end, at most d later. Default: DefaultTTL (10 s),
// which zero and negative values also mean. New refuses a TTL shorter than 3 times the
// timeout (WithTimeout): a renewal must have time to arrive before the lease ends.
func WithTTL(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			d = DefaultTTL
		}
		o.ttl = d
	}
}

// WithTimeout bounds each round trip to Redis (an acquisition, a release, a renewal): the
// limiter gives up on it after d, or at the caller's deadline if that comes first. It
// bounds each round trip, not a wait: a waiting Acquire makes a round trip per wake-up.
// Default: DefaultTimeout (50 ms), which zero also means. A negative value removes the
// bound of the callers' round trips (their contexts' deadlines apply); the limiter's own
// (renewals, releases retried, wake-ups) are then bounded by a third of the TTL, so that
// Close never waits longer. Build the client with ContextTimeoutEnabled: true, or go-redis
// waits on the socket for its own read timeout whatever the bound.
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if d == 0 {
			d = DefaultTimeout
		}
		o.timeout = max(d, 0)
	}
}

// WithPoll sets the safety net of a waiting Acquire: how long the first waiter of a key
// waits for a wake-up before it asks Redis again. A release wakes waiters at once, in this
// process directly and in others through Redis pub/sub; the poll only covers a wake-up lost
// (a reconnection, a client that cannot subscribe). Each wait is drawn at random between
// d/2 and 3d/2. Default: DefaultPoll (1 s), which zero and negative values also mean.
func WithPoll(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			d = DefaultPoll
		}
		o.poll = d
	}
}

// WithQueue sets how many callers of this limiter may wait for one key at once: a caller
// beyond them gets concurrency.ErrQueueFull from Acquire at once. A limiter serves its own
// waiters of a key in arrival order. Default: DefaultQueueLimit (1,000), which zero also
// means; a negative value turns waiting off, and Acquire fails at once with
// concurrency.ErrQueueFull when no permit is free.
func WithQueue(limit int) Option {
	return func(o *options) {
		switch {
		case limit == 0:
			limit = DefaultQueueLimit
		case limit < 0:
			limit = 0
		}
		o.queue = limit
	}
}

// WithOnFailure sets what Acquire and TryAcquire do when Redis cannot answer. Default:
// Degrade, this instance's share of max (WithInstances). ReturnError returns the error
// instead: choose it to put the limiter behind concurrency/fallback, or to let a
// middleware's FailOpen run requests without a permit. Another value panics.
func WithOnFailure(f OnFailure) Option {
	if f != Degrade && f != ReturnError {
		panic(fmt.Sprintf("distributed: WithOnFailure: unknown %v", f))
	}
	return func(o *options) { o.onFailure = f }
}

// WithInstances sets how many instances share each key's max while Redis cannot answer
// (WithOnFailure's Degrade): each grants max/n permits, rounded down, at least 1. Default:
// the number of live limiters of the prefix, which every limiter writes to Redis each third
// of its TTL, as last read (1 until Redis has answered once); zero and negative values also
// mean it.
func WithInstances(n int) Option {
	return func(o *options) { o.instances = max(n, 0) }
}
