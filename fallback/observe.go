package fallback

import (
	"context"

	"github.com/sluice-go/ratelimit"
)

var (
	_ ratelimit.OriginReporter = (*Limiter)(nil)
	_ ratelimit.BackendNamer   = (*Limiter)(nil)
)

// BackendName returns "fallback", the name observers give the decisions the Limiter makes
// itself (see AllowNOrigin).
func (l *Limiter) BackendName() string { return "fallback" }

// AllowNOrigin is AllowN, and also says which limiter decided, for observers
// (ratelimit.OriginReporter): the primary or the secondary, named by
// ratelimit.BackendName ("distributed", "local"); or the Limiter itself, "fallback", for
// what it answers alone: a denial from the denial cache (Origin.Cached), its errors about
// the arguments, ratelimit.ErrClosed, and ErrUnavailable without a secondary.
func (l *Limiter) AllowNOrigin(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, ratelimit.Origin, error) {
	return l.decide(ctx, key, limit, n)
}

// origins are the Origins a Limiter's decisions report, named once by New.
type origins struct {
	primary, secondary, self, cache ratelimit.Origin
}

func originsOf(primary, secondary ratelimit.Limiter) origins {
	o := origins{
		primary: ratelimit.Origin{Backend: ratelimit.BackendName(primary)},
		self:    ratelimit.Origin{Backend: "fallback"},
		cache:   ratelimit.Origin{Backend: "fallback", Cached: true},
	}
	if secondary != nil {
		o.secondary = ratelimit.Origin{Backend: ratelimit.BackendName(secondary)}
	}
	return o
}

// stateHook returns the function the breaker calls on each change of state: the hook of
// WithStateHook, then the observer of WithObserver; nil when there is neither.
func (o *options) stateHook() func(StateChange) {
	hook := o.onState
	obs, _ := ratelimit.Observers(o.observer).(ratelimit.BreakerObserver) // recovers panics
	if obs == nil {
		return hook
	}
	return func(c StateChange) {
		if hook != nil {
			hook(c)
		}
		obs.ObserveBreaker(ratelimit.BreakerTransition{From: c.From.String(), To: c.To.String(), Err: c.Err})
	}
}
