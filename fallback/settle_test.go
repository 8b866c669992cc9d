package fallback_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/local"
)

// Settle settles the real limiter's bucket, or, while down, answers errDown as AllowN does.
func (s *switched) Settle(ctx context.Context, key string, limit ratelimit.Limit, c ratelimit.Charge, reserved, actual int) (ratelimit.Result, error) {
	s.calls.Add(1)
	if s.down.Load() {
		return ratelimit.Result{Limit: limit}, errDown
	}
	return s.Limiter.Settle(ctx, key, limit, c, reserved, actual)
}

func settlerOf(t *testing.T, l ratelimit.Limiter) ratelimit.Settler {
	t.Helper()
	s, ok := ratelimit.As[ratelimit.Settler](l)
	require.True(t, ok)
	return s
}

// TestSettleToThePartThatCharged: an overrun of a request the secondary admitted while the
// primary was down is charged to the secondary after the primary has recovered, and an
// underrun likewise given back there; the primary's bucket, which never held it, is
// untouched. Five an hour: the secondary's bucket, 1 taken and 2 more charged, holds 2.
func TestSettleToThePartThatCharged(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.primary.fail(nil)
	for range fallback.DefaultFailureThreshold {
		r.allow(t, roomy)
	}
	charged := r.allowK(t, true)
	require.Equal(t, "secondary", charged.Charge.Part)
	r.primary.down.Store(false)
	r.clock.Advance(fallback.DefaultCooldown)
	r.allow(t, roomy) // the probe
	require.Equal(t, fallback.Closed, r.l.State())

	_, err := settlerOf(t, r.l).Settle(ctx, "k", fiveAnHour, charged.Charge, 1, 3)
	require.NoError(t, err)
	require.Equal(t, 5, remaining(t, r.primary, "k"))
	require.Equal(t, 2, remaining(t, r.secondary, "k"))
	_, err = settlerOf(t, r.l).Settle(ctx, "k", fiveAnHour, charged.Charge, 3, 1)
	require.NoError(t, err)
	require.Equal(t, 4, remaining(t, r.secondary, "k"), "an underrun given back there too")
	require.Equal(t, 5, remaining(t, r.primary, "k"))
}

// TestSettleWhilePrimaryDown: the overrun of a request the primary admitted cannot be
// charged while the breaker keeps calls off it: the settle says so (ErrUnavailable) and
// charges the secondary nothing; a charge naming no part is refused.
func TestSettleWhilePrimaryDown(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	charged := r.allowK(t, true)
	require.Equal(t, "primary", charged.Charge.Part)
	r.primary.fail(nil)
	for range fallback.DefaultFailureThreshold {
		r.allowK(t, true)
	}
	require.Equal(t, fallback.Open, r.l.State())
	_, err := settlerOf(t, r.l).Settle(ctx, "k", fiveAnHour, charged.Charge, 1, 3)
	require.ErrorIs(t, err, fallback.ErrUnavailable)
	require.Equal(t, 5-fallback.DefaultFailureThreshold, remaining(t, r.secondary, "k"))
	_, err = settlerOf(t, r.l).Settle(ctx, "k", fiveAnHour, ratelimit.Charge{Part: "third"}, 1, 3)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
}

// TestSettlerOnlyWhenBothParts: a fallback has a Settler when both of its parts have one.
func TestSettlerOnlyWhenBothParts(t *testing.T) {
	l := local.New(local.WithCleanupInterval(0))
	t.Cleanup(func() { _ = l.Close() })
	_, ok := ratelimit.As[ratelimit.Settler](fallback.New(l, l))
	require.True(t, ok)
	_, ok = ratelimit.As[ratelimit.Settler](fallback.New(l, hidden{l}))
	require.False(t, ok)
	_, ok = ratelimit.As[ratelimit.Settler](fallback.New(hidden{l}, nil))
	require.False(t, ok)
}

// hidden hides every capability of its limiter.
type hidden struct{ ratelimit.Limiter }
