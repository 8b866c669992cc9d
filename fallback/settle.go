package fallback

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/observe"
)

// settler is a Limiter's ratelimit.Settler, given by As when the primary, and the secondary
// if there is one, can settle (and so, since settling refunds, inspect).
type settler struct {
	l                  *Limiter
	primary, secondary ratelimit.Settler
}

// settlerOf returns l's settler, or false when a part lacks one.
func settlerOf(l *Limiter) (settler, bool) {
	s := settler{l: l}
	var ok bool
	if s.primary, ok = ratelimit.As[ratelimit.Settler](l.primary); !ok {
		return s, false
	}
	if l.secondary != nil {
		if s.secondary, ok = ratelimit.As[ratelimit.Settler](l.secondary); !ok {
			return s, false
		}
	}
	return s, true
}

// Settle settles the decision whose Charge is c on the part that charged it, which c.Part
// names, and nowhere else, as Refund refunds it (see As): the primary through the breaker,
// settling nothing (an error wrapping ErrUnavailable) while it cannot be reached, since the
// secondary never held that charge; the secondary under the scaled limit it was charged
// under (WithInstances). The zero Charge settles the primary's bucket, or, while the primary
// is unavailable, the secondary's. A Charge that names no part is refused with an error
// wrapping args.ErrInvalidRequest. A denial the cache holds for the bucket is
// forgotten.
func (s settler) Settle(ctx context.Context, key string, limit ratelimit.Limit, c ratelimit.Charge, reserved, actual int) (ratelimit.Result, error) {
	l := s.l
	if l.closed.Load() {
		return ratelimit.Result{Limit: limit}, ratelimit.ErrClosed
	}
	defer l.invalidate(key, limit)
	part, own := unmark(c)
	if part == partSecondary {
		if s.secondary == nil {
			return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: Settle: the charge's part %q is none of this limiter's", args.ErrInvalidRequest, c.Part)
		}
		return s.secondary.Settle(ctx, key, l.share(limit), own, reserved, actual)
	}
	if part != "" && part != partPrimary {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: Settle: the charge's part %q is none of this limiter's", args.ErrInvalidRequest, c.Part)
	}
	var res ratelimit.Result
	var err error
	fell, cause := l.call(ctx, key, func() error {
		res, err = s.primary.Settle(ctx, key, limit, own, reserved, actual)
		return err
	})
	switch {
	case !fell:
		return res, err
	case part == "" && s.secondary != nil:
		return s.secondary.Settle(ctx, key, l.share(limit), own, reserved, actual)
	}
	return ratelimit.Result{Limit: limit}, fmt.Errorf("fallback: Settle: nothing settled on the primary, which charged the tokens: %w", cause)
}

// The settler says which limiter decided each hold.
var _ observe.HoldOriginReporter = settler{}

// Hold decides as AllowN does, with the primary's Hold for the primary's decision.
func (s settler) Hold(ctx context.Context, key string, limit ratelimit.Limit, n int, ttl time.Duration) (ratelimit.Result, error) {
	res, _, err := s.HoldOrigin(ctx, key, limit, n, ttl)
	return res, err
}

// HoldOrigin is Hold, and also says which limiter decided, as AllowNOrigin does. ttl is
// checked here, so that a degraded decision refuses what the primary would.
func (s settler) HoldOrigin(ctx context.Context, key string, limit ratelimit.Limit, n int, ttl time.Duration) (ratelimit.Result, observe.Origin, error) {
	if ttl < time.Microsecond {
		return ratelimit.Result{Limit: limit}, s.l.origins.self, fmt.Errorf("%w: fallback: Hold: ttl = %v, want 1µs or more", args.ErrInvalidRequest, ttl)
	}
	return s.l.decide(ctx, key, limit, n, ttl)
}
