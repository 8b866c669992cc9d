package distributed

import "time"

// Defaults of the options.
const (
	// DefaultPrefix starts every key the limiter writes to Redis.
	DefaultPrefix = "concurrency:"
	// DefaultTTL is a permit's lease: how long a permit outlives a holder that stopped
	// renewing it (a crash, a lost network).
	DefaultTTL = 10 * time.Second
	// DefaultTimeout bounds each round trip to Redis.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultPoll is the mean interval at which a waiting Acquire asks again.
	DefaultPoll = 20 * time.Millisecond
	// DefaultQueueLimit is how many callers of a limiter may wait for one key at once.
	DefaultQueueLimit = 1000
)

// Option configures a Limiter built by New. A nil Option is skipped.
type Option func(*options)

type options struct {
	prefix  string
	ttl     time.Duration
	timeout time.Duration
	poll    time.Duration
	queue   int
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
// never meet. A prefix containing a Redis Cluster hash tag ("{…}") sends every key to one slot, and so to one node.
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
// limiter gives up after d, or at the caller's deadline if that comes first. Default:
// DefaultTimeout (50 ms), which zero also means; a negative value removes the limiter's own
// bound. An Acquire or TryAcquire that gives up at this bound returns an error wrapping
// ratelimit.ErrTimeout. Build the client with ContextTimeoutEnabled: true, or go-redis
// waits on the socket for its own read timeout whatever the bound.
func WithTimeout(d time.Duration) Option {
	return func(o *options) {
		if d == 0 {
			d = DefaultTimeout
		}
		o.timeout = max(d, 0)
	}
}

// WithPoll sets the mean interval at which a waiting Acquire asks Redis again for a permit.
// Each wait is drawn at random between d/2 and 3d/2, so that callers released together
// do not ask together. Default: DefaultPoll (20 ms), which zero and negative values also
// mean. A shorter interval hands a freed permit on sooner and costs Redis one script per
// waiter per interval.
func WithPoll(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			d = DefaultPoll
		}
		o.poll = d
	}
}

// WithQueue sets how many callers of this limiter may wait for one key at once: a caller
// beyond them gets concurrency.ErrQueueFull from Acquire at once. Waiters are served in no particular
// order: the first to ask after a permit is freed, in any process, gets it. Default:
// DefaultQueueLimit (1,000), which zero also means; a negative value turns waiting off, and
// Acquire fails at once with concurrency.ErrQueueFull when no permit is free.
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
