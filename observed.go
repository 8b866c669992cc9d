package ratelimit

import (
	"context"
	"time"
)

// ObservedLimiter is a Limiter that tells an Observer of every decision of the Limiter it
// wraps; Observe builds one. It is safe for concurrent use.
//
// It reports each Allow and AllowN. Wait passes through unobserved: how long a caller
// waited is not how long a decision took. Besides Limiter it implements LimitValidator,
// OriginReporter and BackendNamer, forwarding to the wrapped Limiter; other optional
// interfaces of that Limiter are not visible through it.
type ObservedLimiter struct {
	limiter Limiter
	origin  OriginReporter // limiter, if it reports origins
	obs     Observer       // wrapped by Observers: panics recovered
	policy  string
	backend string
	epoch   time.Time // durations are read as differences of time.Since(epoch)
}

var (
	_ Limiter        = (*ObservedLimiter)(nil)
	_ LimitValidator = (*ObservedLimiter)(nil)
	_ OriginReporter = (*ObservedLimiter)(nil)
	_ BackendNamer   = (*ObservedLimiter)(nil)
)

// Observe returns l reporting each of its decisions to o, as a Decision with Policy set to
// policy, Backend to BackendName(l) (or, when l is an OriginReporter such as
// fallback.Limiter, the backend that decided), Cost to n, Priority to the priority ctx
// carries and Duration to the time the call to l took. It is for code that calls a Limiter
// directly; the middlewares take an Observer of their own (WithObserver), and wrapping the
// Limiter they are given as well would report each decision twice.
//
// A panic in o is recovered (see Observers): the call returns l's answer all the same.
// Observe panics if l or o is nil.
func Observe(l Limiter, o Observer, policy string) *ObservedLimiter {
	if l == nil {
		panic("ratelimit: Observe: nil Limiter")
	}
	obs := Observers(o)
	if obs == nil {
		panic("ratelimit: Observe: nil Observer")
	}
	origin, _ := l.(OriginReporter)
	return &ObservedLimiter{
		limiter: l, origin: origin, obs: obs, policy: policy, backend: BackendName(l), epoch: time.Now(),
	}
}

// Allow is AllowN with n = 1.
func (l *ObservedLimiter) Allow(ctx context.Context, key string, limit Limit) (Result, error) {
	return l.AllowN(ctx, key, limit, 1)
}

// AllowN asks the wrapped Limiter, reports its answer, and returns it.
func (l *ObservedLimiter) AllowN(ctx context.Context, key string, limit Limit, n int) (Result, error) {
	res, _, err := l.AllowNOrigin(ctx, key, limit, n)
	return res, err
}

// AllowNOrigin is AllowN, and also returns which backend decided: the wrapped Limiter's
// own answer when it is an OriginReporter, and otherwise its BackendName.
func (l *ObservedLimiter) AllowNOrigin(ctx context.Context, key string, limit Limit, n int) (Result, Origin, error) {
	// Two readings of the monotonic clock; time.Now would add a reading of the wall clock.
	start := time.Since(l.epoch)
	var (
		res Result
		org Origin
		err error
	)
	if l.origin != nil {
		res, org, err = l.origin.AllowNOrigin(ctx, key, limit, n)
	} else {
		res, err = l.limiter.AllowN(ctx, key, limit, n)
	}
	elapsed := time.Since(l.epoch) - start
	if org.Backend == "" {
		org.Backend = l.backend
	}
	d := Decision{
		Policy:   l.policy,
		Backend:  org.Backend,
		Cached:   org.Cached,
		Cost:     n,
		Priority: PriorityFrom(ctx),
		Limit:    limit,
		Duration: elapsed,
	}
	d.SetOutcome(ctx, res, err)
	l.obs.ObserveDecision(ctx, d)
	return res, org, err
}

// Wait is the wrapped Limiter's Wait, unobserved.
func (l *ObservedLimiter) Wait(ctx context.Context, key string, limit Limit) error {
	return l.limiter.Wait(ctx, key, limit)
}

// Close closes the wrapped Limiter.
func (l *ObservedLimiter) Close() error { return l.limiter.Close() }

// ValidateLimit asks the wrapped Limiter when it is a LimitValidator, and otherwise returns
// limit.Validate().
func (l *ObservedLimiter) ValidateLimit(limit Limit) error {
	if v, ok := l.limiter.(LimitValidator); ok {
		return v.ValidateLimit(limit)
	}
	return limit.Validate()
}

// BackendName returns the wrapped Limiter's BackendName.
func (l *ObservedLimiter) BackendName() string { return l.backend }

// Unwrap returns the wrapped Limiter, for callers that need one of its optional interfaces.
func (l *ObservedLimiter) Unwrap() Limiter { return l.limiter }
