package fallback

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/breaker"
	"github.com/sluice-go/ratelimit/internal/nilarg"
)

// The breaker's states and changes are the rate limits' fallback's (one type, from a
// package both share), so that one hook, such as an observer's ObserveBreaker method,
// serves both.
type (
	// State is the state of a Limiter's circuit breaker: Closed, Open or HalfOpen. Its
	// String method returns "closed", "open" or "half-open".
	State = breaker.State
	// StateChange is one transition of a Limiter's circuit breaker, as passed to the hooks
	// of WithStateHook: From, To and Err, with the methods Degraded, Recovered, Edge (the
	// start and the end of an outage), String and LogValue, as the rate limits'
	// fallback.StateChange, which is the same type.
	StateChange = breaker.Change
)

// The states of the circuit breaker.
const (
	// Closed: every call goes to the primary. The zero State.
	Closed = breaker.Closed
	// Open: the primary failed too often; the secondary grants until the cooldown ends.
	Open = breaker.Open
	// HalfOpen: one call, the probe, goes to the primary; the others to the secondary.
	HalfOpen = breaker.HalfOpen
)

// ErrUnavailable is wrapped by the errors a Limiter without a secondary returns when the
// primary cannot decide: it failed, or the circuit breaker is open. It is the rate limits'
// fallback.ErrUnavailable, the same value.
var ErrUnavailable = breaker.ErrUnavailable

var errOpen = fmt.Errorf("%w: circuit breaker open", ErrUnavailable)

// Limiter is a concurrency.Limiter that asks a primary limiter (typically Redis, package
// [github.com/sluice-go/ratelimit/concurrency/distributed]) for permits and, while the
// primary is unavailable, a secondary one (typically a concurrency/local Limiter) for this
// instance's share of max. A circuit breaker stops calling a failing primary for a while.
// It is safe for concurrent use.
//
// A permit is released to the limiter that granted it, whatever the breaker's state when
// it is released: the Permit carries its limiter.
type Limiter struct {
	primary   concurrency.Limiter
	secondary concurrency.Limiter // nil: fail with ErrUnavailable instead
	instances int
	breaker   breaker.Breaker
	onError   func(ctx context.Context, key string, err error)
	clock     breaker.Clock
	closed    atomic.Bool
}

var (
	_ concurrency.Limiter       = (*Limiter)(nil)
	_ concurrency.StatsReporter = (*Limiter)(nil)
)

// New returns a Limiter that acquires permits from primary while it answers, and from
// secondary, for max/instances of each key (WithInstances), while it does not. secondary
// may be nil: calls the primary cannot decide then fail with an error wrapping
// ErrUnavailable, and the caller's error policy applies.
//
// New panics if primary is nil, or secondary a nil of some type (a nil *Limiter of
// concurrency/local, which would panic on the first call the primary fails). The Limiter
// starts no goroutine, and closes neither limiter: they belong to the caller.
func New(primary, secondary concurrency.Limiter, opts ...Option) *Limiter {
	if nilarg.Is(primary) {
		panic("fallback: New: nil primary Limiter")
	}
	if nilarg.Typed(secondary) {
		panic(fmt.Sprintf("fallback: New: nil secondary Limiter (%T): pass nil for none", secondary))
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	l := &Limiter{
		primary:   primary,
		secondary: secondary,
		instances: o.instances,
		onError:   o.onError,
		clock:     breaker.NewClock(o.clock),
	}
	l.breaker.Threshold, l.breaker.Cooldown = o.threshold, int64(o.cooldown)
	l.breaker.Hook = breaker.Hooks(o.onState)
	return l
}

// Acquire returns a permit for key from the primary while the breaker lets calls through
// to it, and otherwise from the secondary, under this instance's share of max
// (WithInstances); without a secondary it then fails with an error wrapping
// ErrUnavailable.
//
// The primary's answers are returned as they are: its permits, and its refusals and the
// errors that are not failures of the primary (concurrency.ErrQueueFull, the caller's
// context ending, ratelimit.ErrClosed, errors about the arguments). Its failures
// (ratelimit.ErrTimeout, errors talking to Redis) count toward opening the breaker, and the
// secondary then answers in its place, within what is left of ctx.
func (l *Limiter) Acquire(ctx context.Context, key string, max int) (concurrency.Permit, error) {
	p, _, err := l.acquire(ctx, key, max, true)
	return p, err
}

// TryAcquire is Acquire that never waits: the primary's, or the secondary's, TryAcquire.
func (l *Limiter) TryAcquire(ctx context.Context, key string, max int) (concurrency.Permit, bool, error) {
	return l.acquire(ctx, key, max, false)
}

// acquire is Acquire when wait, TryAcquire otherwise.
func (l *Limiter) acquire(ctx context.Context, key string, max int, wait bool) (concurrency.Permit, bool, error) {
	if err := l.check(ctx, key, max); err != nil {
		return concurrency.Permit{}, false, err
	}
	ok, t := l.breaker.Admit(l.now())
	if !ok {
		return l.degraded(ctx, key, max, wait, errOpen)
	}
	p, ok, err := call(ctx, l.primary, key, max, wait)
	switch {
	case err == nil:
		l.breaker.Success(t)
		return p, ok, nil
	case !isFailure(ctx, err):
		l.breaker.Inconclusive(t, l.now())
		return p, ok, err
	}
	l.breaker.Failure(t, l.now(), err)
	if l.onError != nil {
		l.onError(ctx, key, err)
	}
	return l.degraded(ctx, key, max, wait, fmt.Errorf("%w: %w", ErrUnavailable, err))
}

// degraded acquires from the secondary under the share, or returns unavailable when there
// is no secondary.
func (l *Limiter) degraded(ctx context.Context, key string, max int, wait bool, unavailable error) (concurrency.Permit, bool, error) {
	if l.secondary == nil {
		return concurrency.Permit{}, false, unavailable
	}
	return call(ctx, l.secondary, key, l.share(max), wait)
}

// call is limiter's Acquire when wait, its TryAcquire otherwise; an Acquire's permit is ok
// when it comes without an error.
func call(ctx context.Context, limiter concurrency.Limiter, key string, max int, wait bool) (concurrency.Permit, bool, error) {
	if !wait {
		return limiter.TryAcquire(ctx, key, max)
	}
	p, err := limiter.Acquire(ctx, key, max)
	return p, err == nil, err
}

// share returns this instance's share of n permits: n/instances, rounded down, at least 1.
func (l *Limiter) share(n int) int { return max(n/l.instances, 1) }

// Close makes every later Acquire and TryAcquire fail with ratelimit.ErrClosed; permits
// already granted may still be released. It closes neither the primary nor the secondary,
// which belong to the caller. A second Close returns nil.
func (l *Limiter) Close() error {
	l.closed.Store(true)
	return nil
}

// State returns the state of the circuit breaker.
func (l *Limiter) State() State { return l.breaker.State() }

// check refuses what no limiter could decide, and a caller whose context has ended, before
// either limiter is asked: such calls say nothing of the primary's health.
func (l *Limiter) check(ctx context.Context, key string, max int) error {
	switch {
	case l.closed.Load():
		return fmt.Errorf("fallback: %w", ratelimit.ErrClosed)
	case key == "":
		return fmt.Errorf("fallback: %w", args.ErrKeyEmpty)
	case len(key) > args.MaxKeyLen:
		return fmt.Errorf("fallback: %w", args.ErrKeyTooLong)
	case max < 1:
		return fmt.Errorf("fallback: max %d: %w", max, args.ErrInvalidLimit)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fallback: %w", err)
	}
	return nil
}

// now returns the time in nanoseconds since the Limiter's epoch, never negative.
func (l *Limiter) now() int64 { return l.clock.Now() }

// isFailure reports whether err, returned by the primary for a call made with ctx, means
// that the primary failed (see breaker.IsFailure): a refusal for lack of capacity
// (concurrency.ErrQueueFull) is an answer.
func isFailure(ctx context.Context, err error) bool {
	return !errors.Is(err, concurrency.ErrQueueFull) && breaker.IsFailure(ctx, err)
}

// Stats returns the sum of the primary's and the secondary's Stats, for those of them that
// report any (concurrency.StatsReporter: Local and the Redis backend do): the permits held
// through this limiter wherever they were granted. MinLimit and MaxLimit span both.
func (l *Limiter) Stats() concurrency.Stats {
	var s concurrency.Stats
	for _, part := range [2]concurrency.Limiter{l.primary, l.secondary} {
		r, ok := part.(concurrency.StatsReporter)
		if !ok {
			continue
		}
		p := r.Stats()
		if p.Keys > 0 {
			if s.Keys == 0 || p.MinLimit < s.MinLimit {
				s.MinLimit = p.MinLimit
			}
			s.MaxLimit = max(s.MaxLimit, p.MaxLimit)
		}
		s.Keys += p.Keys
		s.InFlight += p.InFlight
		s.Waiting += p.Waiting
	}
	return s
}
