package local

import (
	"fmt"
	"github.com/sluice-go/ratelimit/concurrency"
	"time"
)

// Defaults of the options.
const (
	// DefaultQueueLimit is how many callers may wait for a key's permits at once.
	DefaultQueueLimit = 1000
	// DefaultMaxKeys caps the number of keys a Limiter tracks.
	DefaultMaxKeys = 1 << 20
)

// Order is the order in which waiting callers get free permits.
type Order int

const (
	// OldestFirst serves waiters in arrival order; when the queue is full, a new caller is
	// refused at once with ErrQueueFull.
	OldestFirst Order = iota
	// NewestFirst serves the most recent waiter first; when the queue is full, the oldest
	// waiter is refused with ErrQueueFull and the new caller takes a place. Under overload
	// the callers most likely to still be waited for (their clients have not timed out) are
	// served, and the oldest give up first.
	NewestFirst
)

// String returns "OldestFirst" or "NewestFirst".
func (o Order) String() string {
	switch o {
	case OldestFirst:
		return "OldestFirst"
	case NewestFirst:
		return "NewestFirst"
	}
	return fmt.Sprintf("Order(%d)", int(o))
}

// Option configures a Limiter built by New. A nil Option is skipped.
type Option func(*options)

type options struct {
	queue    int
	order    Order
	maxKeys  int
	clock    func() time.Time
	adaptive *concurrency.AIMD
}

func defaultOptions() options {
	return options{queue: DefaultQueueLimit, maxKeys: DefaultMaxKeys}
}

// WithQueue sets how many callers may wait for each key's permits (limit) and in which
// order they are served. Default: DefaultQueueLimit (1,000) waiters per key, OldestFirst;
// a zero limit means the default. A negative limit turns the queue off: Acquire then fails
// at once with ErrQueueFull when no permit is free, as TryAcquire reports ok = false. An
// order other than OldestFirst and NewestFirst panics.
func WithQueue(limit int, order Order) Option {
	if order != OldestFirst && order != NewestFirst {
		panic(fmt.Sprintf("local: WithQueue: unknown order %v", order))
	}
	return func(o *options) {
		switch {
		case limit == 0:
			limit = DefaultQueueLimit
		case limit < 0:
			limit = 0
		}
		o.queue, o.order = limit, order
	}
}

// WithMaxKeys caps the number of keys the limiter tracks, so that a flood of distinct keys
// cannot exhaust memory. Default: DefaultMaxKeys (1,048,576), which zero and negative values
// also mean: the cap cannot be turned off. The keys are split into 64 shards with a cap
// each, so the cap is n rounded down to a multiple of 64, and at least 64.
//
// A key with no holder and no waiter carries no state (except its adaptive limit): at the
// cap, a new key takes the place of such a key, found by sampling a few of its shard's
// keys. When every sampled key is busy, the new key shares one overflow key with every
// other such key of its shard: together they get max permits, max being each call's own.
// Traffic is never admitted unlimited; under a flood of keys, new keys queue behind each
// other until tracked keys go idle and make room.
func WithMaxKeys(n int) Option {
	return func(o *options) {
		if n < 1 {
			n = DefaultMaxKeys
		}
		o.maxKeys = n
	}
}

// WithClock makes the limiter read the time from now instead of the system's monotonic
// clock. Only an adaptive limit reads the time (to measure how long each permit was held):
// give it a clock to replay or simulate traffic, or in tests. Default: the system clock; a
// nil now means the default.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}

// WithAdaptive makes each key's limit adapt to how the protected work fares, as the
// holders report it through concurrency.Permit.ReleaseWith: see concurrency.AIMD. The max
// of each call is then the most the key's limit may rise to. Default: no adaptation, the
// limit is each call's max. New panics when a's fields are out of range
// (concurrency.AIMD.Validate).
func WithAdaptive(a concurrency.AIMD) Option {
	return func(o *options) {
		o.adaptive = &a
	}
}
