package fallback

import (
	"context"
	"time"

	"github.com/sluice-go/ratelimit/internal/breaker"
)

// Defaults of the options, those of the rate limits' fallback.
const (
	// DefaultFailureThreshold is how many failures of the primary in a row open the
	// circuit breaker.
	DefaultFailureThreshold = breaker.DefaultThreshold
	// DefaultCooldown is how long the breaker stays open before a probe tries the primary
	// again.
	DefaultCooldown = breaker.DefaultCooldown
)

// Option configures a Limiter built by New. A nil Option is skipped.
type Option func(*options)

type options struct {
	instances int
	threshold int32
	cooldown  time.Duration
	onError   func(ctx context.Context, key string, err error)
	onState   []func(StateChange)
	clock     func() time.Time
}

func defaultOptions() options {
	return options{instances: 1, threshold: DefaultFailureThreshold, cooldown: DefaultCooldown}
}

// WithInstances sets how many instances of the service are expected to share each key's
// max, so that while the primary is unavailable each instance's secondary admits its share:
// max/n permits, rounded down, and at least 1. Default: 1, the whole max on every instance
// (n instances together then admit up to n times max); zero and negative values also mean
// 1.
func WithInstances(n int) Option {
	return func(o *options) { o.instances = max(n, 1) }
}

// WithFailureThreshold sets how many failures of the primary in a row open the circuit
// breaker. Default: DefaultFailureThreshold (5), which zero also means. A negative value
// turns the breaker off: every call then tries the primary first, and pays for its failure
// (up to the primary's deadline) before falling back.
func WithFailureThreshold(n int) Option {
	return func(o *options) { o.threshold = breaker.Threshold(n) }
}

// WithCooldown sets how long the circuit breaker stays open before one call, the probe,
// tries the primary again. Default: DefaultCooldown (250 ms), which zero and negative
// values also mean: a breaker without a cooldown would never try the primary again.
func WithCooldown(d time.Duration) Option {
	return func(o *options) { o.cooldown = breaker.Cooldown(d) }
}

// WithErrorHandler sets a function told of every failure of the primary, before the
// secondary answers in its place. It is not told of the calls the open breaker keeps off
// the primary (StateChange reports those periods), nor of the primary's answers
// (concurrency.ErrQueueFull, a caller's ended context). It runs on the caller's goroutine,
// so it should be quick. Default: none.
func WithErrorHandler(f func(ctx context.Context, key string, err error)) Option {
	return func(o *options) { o.onError = f }
}

// WithStateHook adds a function told of every change of the circuit breaker's state, as
// the rate limits' fallback.WithStateHook does: Closed → Open when the primary has failed
// too often, HalfOpen → Closed when it is back, and Open ↔ HalfOpen for each probe in
// between; StateChange.Edge is true for the first two only. The observers' ObserveBreaker
// methods fit. Each call adds a function; they are called in the order given, on the
// goroutine of the call that made the change, holding no lock, and a panic in one is
// recovered. A nil f is skipped. Default: none.
func WithStateHook(f func(StateChange)) Option {
	return func(o *options) {
		if f != nil {
			o.onState = append(o.onState, f)
		}
	}
}

// WithClock makes the Limiter read the time from now instead of the system's monotonic
// clock, for the breaker's cooldown, so that tests can move time by hand. Default: the
// system clock; a nil now means the default. The limiters it wraps keep their own clocks.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.clock = now }
}
