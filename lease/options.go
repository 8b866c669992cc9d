package lease

import (
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/observe"
)

// Defaults of the options.
const (
	// DefaultTarget is how long a chunk is meant to last at the instance's own rate.
	DefaultTarget = 100 * time.Millisecond
	// DefaultInstances is the fleet size the chunk cap assumes.
	DefaultInstances = 8
	// DefaultLeaseTime is how long Redis keeps the record of an instance's tokens without
	// hearing from it.
	DefaultLeaseTime = time.Second
	// CapShare is the share of Burst that the chunks of a whole fleet may hold at once:
	// a chunk holds at most Burst/(CapShare·k) tokens (k: WithInstances).
	CapShare = 4
)

// Option configures a Limiter built by New.
type Option func(*options)

type options struct {
	hot       func(key string, limit ratelimit.Limit) bool
	target    time.Duration
	instances int
	shards    int
	leaseTime time.Duration
	observer  observe.Observer
	policy    string
}

func defaultOptions() options {
	return options{target: DefaultTarget, instances: DefaultInstances, shards: 1,
		leaseTime: DefaultLeaseTime}
}

// WithHot selects the keys to lease: those for which hot reports true. Default: none, so
// that a Limiter without it decides every key on the backend, as the backend alone would.
// hot must answer the same for a (key, limit) on every instance: a key leased on one
// instance and not on another is two buckets (a leased bucket's Redis key has its own tag).
// It is called on every decision, so keep it to a comparison or a map read.
func WithHot(hot func(key string, limit ratelimit.Limit) bool) Option {
	return func(o *options) { o.hot = hot }
}

// WithTarget sets how long a chunk is meant to last at the rate this instance spends the
// key's tokens: the chunk asked for is that rate times d, within the cap (WithInstances).
// Default: DefaultTarget (100 ms); zero means the default. A longer target makes fewer
// calls to Redis and holds more tokens per instance.
func WithTarget(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			d = DefaultTarget
		}
		o.target = d
	}
}

// WithInstances sets k, the number of instances sharing the leased keys, which caps a
// chunk at Burst/(CapShare·k) tokens (at least 1), so that the whole fleet holds at most a
// quarter of Burst at once: the bound of docs/leases.md is then Burst + Rate·W + Burst/4.
// Default: DefaultInstances (8); zero means the default. A fleet larger than k keeps the
// bound with k·c for its real k.
func WithInstances(k int) Option {
	return func(o *options) {
		if k <= 0 {
			k = DefaultInstances
		}
		o.instances = k
	}
}

// WithShards splits every leased key over k buckets, each with Rate/k and a k-th of Burst
// (Burst must be at least k, or the key is decided on one bucket), whose Redis keys fall in
// different hash slots: for a key that still exceeds one Redis thread after leasing. Each
// chunk is drawn from the shard this instance last saw the fullest. It never admits more
// than one bucket would; it admits less when the shards are drained unevenly, since a full
// shard's refill is lost while another is empty (docs/leases.md has the measured figure).
// Default: 1 (no split); zero means the default.
func WithShards(k int) Option {
	return func(o *options) {
		if k <= 0 {
			k = 1
		}
		o.shards = k
	}
}

// WithLeaseTime sets how long Redis keeps the record of what an instance holds without
// hearing from it: when an instance dies (or loses Redis) holding tokens, they go back to
// the bucket that long after its last call. The instance itself spends none of them past
// seven eighths of it, renews its record after half of it, and gives a key's tokens back
// when the key has not been used for half of it. Default: DefaultLeaseTime (1 s); zero
// means the default. It must be longer than the target (WithTarget): New panics otherwise.
func WithLeaseTime(d time.Duration) Option {
	return func(o *options) {
		if d <= 0 {
			d = DefaultLeaseTime
		}
		o.leaseTime = d
	}
}

// check panics on options that conflict.
func (o *options) check() {
	if o.leaseTime <= o.target {
		panic(fmt.Sprintf("lease: New: WithLeaseTime (%v) must be longer than WithTarget (%v)", o.leaseTime, o.target))
	}
}

// WithObserver tells o of every grant: each call to Redis for a chunk, as an
// observe.Decision with Lease set (see its doc), under policy. Default: none. The leased
// decisions themselves are decisions like any other: observe them with observe.Wrap around
// the Limiter, or a middleware's WithObserver.
func WithObserver(policy string, o observe.Observer) Option {
	return func(opts *options) { opts.policy, opts.observer = policy, o }
}
