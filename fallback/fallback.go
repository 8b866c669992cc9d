package fallback

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/breaker"
	"github.com/sluice-go/ratelimit/internal/nilarg"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
)

// ErrUnavailable is wrapped by the errors a Limiter without a secondary returns when the
// primary cannot decide: it failed, or the circuit breaker is open.
var ErrUnavailable = breaker.ErrUnavailable

// errOpen is returned, without a secondary, while the breaker keeps calls off the primary.
var errOpen = fmt.Errorf("%w: circuit breaker open", ErrUnavailable)

// Limiter is a ratelimit.Limiter that asks a primary limiter (typically Redis, package
// distributed) and, while the primary is unavailable, a secondary one (typically in-process,
// package local). A circuit breaker stops calling a failing primary for a while, and a
// denial cache answers requests the primary is known to deny without asking it. Its
// capabilities are those its limiters have (see As). It is safe for concurrent use.
type Limiter struct {
	primary   ratelimit.Limiter
	secondary ratelimit.Limiter // nil: fail with ErrUnavailable instead
	instances int
	reserves  priority.Reserves
	breaker   breaker.Breaker
	cache     *denialCache // nil when off
	onError   func(ctx context.Context, key string, err error)
	origins   origins
	parts     parts
	clock     breaker.Clock
	closed    atomic.Bool
}

var _ ratelimit.Limiter = (*Limiter)(nil)

// New returns a Limiter that decides with primary while it answers, and with secondary
// while it does not. secondary may be nil: calls that the primary cannot decide then fail
// with an error wrapping ErrUnavailable, and the caller's error policy applies, so that the
// Limiter adds the circuit breaker and the denial cache to a primary of its own.
//
// New panics if primary is nil, or secondary a nil of some type (a (*local.Limiter)(nil),
// which would panic on the first request the primary fails), or on reserves that cannot
// be enforced (WithReserves). The
// Limiter starts no goroutine, and closes neither limiter: they belong to the caller.
func New(primary, secondary ratelimit.Limiter, opts ...Option) *Limiter {
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
	if err := o.reserves.Validate(); err != nil {
		panic("fallback: New: WithReserves: " + err.Error())
	}
	l := &Limiter{
		primary:   primary,
		secondary: secondary,
		instances: o.instances,
		reserves:  o.reserves,
		onError:   o.onError,
		origins:   originsOf(primary, secondary),
		parts:     partsOf(primary, secondary),
		clock:     breaker.NewClock(o.clock),
	}
	l.breaker.Threshold, l.breaker.Cooldown = o.threshold, int64(o.cooldown)
	l.breaker.Hook = breaker.Hooks(o.onState)
	if o.cacheSize > 0 {
		l.cache = newDenialCache(o.cacheSize, o.cacheTTL)
	}
	return l
}

// Allow is AllowN with n = 1.
func (l *Limiter) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return l.AllowN(ctx, key, limit, 1)
}

// AllowN decides a request for n tokens on the bucket of (key, limit):
//
//   - Invalid arguments are rejected first, with the errors of every backend.
//   - A request the denial cache proves the primary would deny is denied at once.
//   - While the breaker is closed (or for its probe), the primary decides. Its answers,
//     and its errors about the arguments (ratelimit.ErrExceedsBurst and the like, which
//     are not failures), are returned as they are.
//   - When the primary fails, or the breaker keeps calls off it, the secondary decides
//     under the scaled limit (WithInstances); without a secondary, AllowN returns an
//     error wrapping ErrUnavailable.
func (l *Limiter) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	res, _, err := l.decide(ctx, key, limit, n, 0)
	return res, err
}

// decide is AllowN, and also says which limiter decided (AllowNOrigin); with a hold's ttl
// (not 0) the primary decides by its Hold (see holder), the secondary by AllowN as ever.
func (l *Limiter) decide(ctx context.Context, key string, limit ratelimit.Limit, n int, ttl time.Duration) (ratelimit.Result, observe.Origin, error) {
	if l.closed.Load() {
		return ratelimit.Result{Limit: limit}, l.origins.self, ratelimit.ErrClosed
	}
	if err := args.Check(key, limit, n); err != nil {
		return ratelimit.Result{Limit: limit}, l.origins.self, err
	}
	sent := l.now()
	var p priority.Level
	var gen uint64
	if l.cache != nil {
		p = priority.From(ctx)
		var res ratelimit.Result
		var ok bool
		if res, gen, ok = l.cache.lookup(key, limit, n, p, sent); ok {
			return res, l.origins.cache, nil
		}
	}
	ok, t := l.breaker.Admit(sent)
	if !ok {
		return l.degraded(ctx, key, limit, n, errOpen)
	}
	var res ratelimit.Result
	var err error
	if ttl != 0 {
		res, err = l.parts.primaryHold.Hold(ctx, key, limit, n, ttl)
	} else {
		res, err = l.primary.AllowN(ctx, key, limit, n)
	}
	switch {
	case err == nil:
		l.breaker.Success(t)
		switch {
		case l.cache == nil:
		case res.Allowed:
			l.cache.forget(key, limit)
		default:
			l.cache.store(key, limit, n, p, sent, gen, res)
		}
		if res.Allowed {
			res.Charge = mark(res.Charge, partPrimary)
		}
		return res, l.origins.primary, nil
	case !isFailure(ctx, err):
		l.breaker.Inconclusive(t, l.now())
		return res, l.origins.primary, err
	}
	l.fail(ctx, key, t, err)
	return l.degraded(ctx, key, limit, n, fmt.Errorf("%w: %w", ErrUnavailable, err))
}

// Wait waits with the primary while it is available, and otherwise with the secondary under
// the scaled limit (or fails with an error wrapping ErrUnavailable). A primary that cannot
// wait (the Redis backend) returns ratelimit.ErrNotSupported, which Wait returns as it is.
// The denial cache plays no part in Wait.
func (l *Limiter) Wait(ctx context.Context, key string, limit ratelimit.Limit) error {
	if l.closed.Load() {
		return ratelimit.ErrClosed
	}
	if err := args.Check(key, limit, 1); err != nil {
		return err
	}
	ok, t := l.breaker.Admit(l.now())
	if !ok {
		return l.waitDegraded(ctx, key, limit, errOpen)
	}
	err := l.primary.Wait(ctx, key, limit)
	switch {
	case err == nil:
		l.breaker.Success(t)
		return nil
	case !isFailure(ctx, err) || errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ratelimit.ErrTimeout):
		// Waiting ends with the context's error by design (or fails at once when the turn
		// comes after the deadline): that says nothing of the primary's health.
		l.breaker.Inconclusive(t, l.now())
		return err
	}
	l.fail(ctx, key, t, err)
	return l.waitDegraded(ctx, key, limit, fmt.Errorf("%w: %w", ErrUnavailable, err))
}

// Close makes every later call return ratelimit.ErrClosed. It closes neither the primary
// nor the secondary, which belong to the caller. Close is idempotent and returns nil.
func (l *Limiter) Close() error {
	l.closed.Store(true)
	return nil
}

// State returns the state of the circuit breaker.
func (l *Limiter) State() State { return l.breaker.State() }

// fail records a failure of the primary and reports it.
func (l *Limiter) fail(ctx context.Context, key string, t breaker.Ticket, err error) {
	l.breaker.Failure(t, l.now(), err)
	if l.onError != nil {
		l.onError(ctx, key, err)
	}
}

// degraded decides with the secondary, or returns unavailable when there is none.
func (l *Limiter) degraded(ctx context.Context, key string, limit ratelimit.Limit, n int, unavailable error) (ratelimit.Result, observe.Origin, error) {
	if l.secondary == nil {
		return ratelimit.Result{Limit: limit}, l.origins.self, unavailable
	}
	share := l.share(limit)
	res, err := l.secondary.AllowN(ctx, key, share, l.shareCost(priority.From(ctx), limit, share, n))
	if res.Allowed {
		res.Charge = mark(res.Charge, partSecondary)
	}
	return res, l.origins.secondary, err
}

// shareCost returns the cost to ask of the secondary under share for a request of n tokens
// at priority p on limit. A request the primary could admit, n within the part of the
// limit's burst left to p (Burst less the reserve kept back from p, WithReserves), must not
// be refused as too costly by the share: when n is more than the part of the share's burst
// left to p, it takes all of that part, and passes when the share is full. Any other n
// (below 1, or above the limit's part) is left as it is, for the secondary to refuse as
// the primary would.
func (l *Limiter) shareCost(p priority.Level, limit, share ratelimit.Limit, n int) int {
	if share == limit || n < 1 || n > limit.Burst-l.reserves.Tokens(p, limit.Burst) {
		return n
	}
	return min(n, share.Burst-l.reserves.Tokens(p, share.Burst))
}

func (l *Limiter) waitDegraded(ctx context.Context, key string, limit ratelimit.Limit, unavailable error) error {
	if l.secondary == nil {
		return unavailable
	}
	return l.secondary.Wait(ctx, key, l.share(limit))
}

// share returns this instance's share of limit: 1/instances of the rate and of the burst
// (rounded down, at least 1), with the same warm-up and algorithm.
func (l *Limiter) share(limit ratelimit.Limit) ratelimit.Limit {
	if l.instances <= 1 {
		return limit
	}
	share := limit
	share.Rate, share.Burst = limit.Rate/float64(l.instances), max(1, limit.Burst/l.instances)
	return share
}

// now returns the time in nanoseconds since the Limiter's epoch, never negative.
func (l *Limiter) now() int64 { return l.clock.Now() }

// isFailure reports whether err, returned by the primary for a call made with ctx, means
// that the primary failed (see breaker.IsFailure).
func isFailure(ctx context.Context, err error) bool { return breaker.IsFailure(ctx, err) }

// validateLimit is the ValidateLimit of the Limiter's ratelimit.LimitValidator (see As): nil
// if both limiters accept limit (the secondary, its share of it: see WithInstances), or the
// first one's error. A limiter that cannot say is taken to accept it.
func (l *Limiter) validateLimit(limit ratelimit.Limit) error {
	if err := limit.Validate(); err != nil {
		return err
	}
	if v := l.parts.primaryVal; v != nil {
		if err := v.ValidateLimit(limit); err != nil {
			return err
		}
	}
	if v := l.parts.secondaryVal; v != nil {
		return v.ValidateLimit(l.share(limit))
	}
	return nil
}
