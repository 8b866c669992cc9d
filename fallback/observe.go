package fallback

import (
	"context"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/observe"
)

var (
	_ observe.OriginReporter = (*Limiter)(nil)
	_ observe.BackendNamer   = (*Limiter)(nil)
)

// BackendName returns "fallback", the name observers give the decisions the Limiter makes
// itself (see AllowNOrigin).
func (l *Limiter) BackendName() string { return "fallback" }

// AllowNOrigin is AllowN, and also says which limiter decided, for observers
// (observe.OriginReporter): the primary or the secondary, named by observe.BackendName
// ("distributed", "local"); or the Limiter itself, "fallback", for
// what it answers alone: a denial from the denial cache (Origin.Cached), its errors about
// the arguments, ratelimit.ErrClosed, and ErrUnavailable without a secondary.
func (l *Limiter) AllowNOrigin(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, observe.Origin, error) {
	return l.decide(ctx, key, limit, n, 0)
}

// origins are the Origins a Limiter's decisions report, named once by New.
type origins struct {
	primary, secondary, self, cache observe.Origin
}

func originsOf(primary, secondary ratelimit.Limiter) origins {
	o := origins{
		primary: observe.Origin{Backend: observe.BackendName(primary)},
		self:    observe.Origin{Backend: "fallback"},
		cache:   observe.Origin{Backend: "fallback", Cached: true},
	}
	if secondary != nil {
		o.secondary = observe.Origin{Backend: observe.BackendName(secondary)}
	}
	return o
}
