package fallback_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/fallback"
)

// fiveAnHour refills nothing within these tests: a token an hour, five at most.
var fiveAnHour = ratelimit.Limit{Rate: 1.0 / 3600, Burst: 5}

// remaining returns what a bucket of l holds, as Peek for one token says it.
func remaining(t *testing.T, l ratelimit.Limiter, key string) int {
	t.Helper()
	res, err := ins(l).Peek(context.Background(), key, fiveAnHour, 1)
	require.NoError(t, err)
	if res.Allowed {
		return res.Remaining + 1 // Peek counts the token it asks about as taken
	}
	return res.Remaining
}

// allowK asks for a token of "k" and requires the answer want.
func (r *rig) allowK(t *testing.T, want bool) ratelimit.Result {
	t.Helper()
	res, err := r.l.Allow(context.Background(), "k", fiveAnHour)
	require.NoError(t, err)
	require.Equal(t, want, res.Allowed)
	return res
}

// TestRefundAfterRecovery: a token the secondary took while the primary was down goes back
// to the secondary after the primary has recovered, not to the primary, whose bucket it
// never left: the primary admits 5 of 5, not 6.
func TestRefundAfterRecovery(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	r.primary.fail(nil)
	for range fallback.DefaultFailureThreshold {
		r.allow(t, roomy) // decided by the secondary, on bucket "k" of roomy
	}
	require.Equal(t, fallback.Open, r.l.State())
	charged := r.allowK(t, true)
	require.Equal(t, "secondary", charged.Charge.Part)

	r.primary.down.Store(false)
	r.clock.Advance(fallback.DefaultCooldown)
	r.allow(t, roomy) // the probe
	require.Equal(t, fallback.Closed, r.l.State())
	for range 5 {
		require.Equal(t, "primary", r.allowK(t, true).Charge.Part)
	}

	_, err := ins(r.l).Refund(ctx, "k", fiveAnHour, 1, charged.Charge)
	require.NoError(t, err)
	r.allowK(t, false) // the sixth
	require.Equal(t, 0, remaining(t, r.primary, "k"))
	require.Equal(t, 5, remaining(t, r.secondary, "k"), "the secondary has its token back")
}

// TestRefundWhilePrimaryDown: a token the primary took cannot be given back while the
// breaker keeps calls off it; the refund gives nothing, least of all to the secondary, whose
// bucket it never left: the secondary admits 5 of 5, not 6. A refund with no charge (an
// operator's) still goes to whichever limiter decides now.
func TestRefundWhilePrimaryDown(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	charged := r.allowK(t, true)
	require.Equal(t, "primary", charged.Charge.Part)

	r.primary.fail(nil)
	for range fallback.DefaultFailureThreshold {
		r.allowK(t, true) // decided by the secondary
	}
	require.Equal(t, fallback.Open, r.l.State())
	calls := r.primary.calls.Load()
	_, err := ins(r.l).Refund(ctx, "k", fiveAnHour, 1, charged.Charge)
	require.ErrorIs(t, err, fallback.ErrUnavailable)
	require.Equal(t, calls, r.primary.calls.Load(), "the breaker keeps the refund off the primary")
	r.allowK(t, false) // the sixth
	require.Equal(t, 0, remaining(t, r.secondary, "k"))
	require.Equal(t, 4, remaining(t, r.primary.Limiter, "k"), "the primary still holds the token")

	_, err = ins(r.l).Refund(ctx, "k", fiveAnHour, 1, ratelimit.Charge{})
	require.NoError(t, err)
	require.Equal(t, 1, remaining(t, r.secondary, "k"))
}

// TestRefundPrimaryFails: a refund the primary fails to make is not made anywhere else.
func TestRefundPrimaryFails(t *testing.T) {
	r := newRig(t)
	charged := r.allowK(t, true)
	r.primary.fail(nil)
	_, err := ins(r.l).Refund(context.Background(), "k", fiveAnHour, 1, charged.Charge)
	require.ErrorIs(t, err, fallback.ErrUnavailable)
	require.ErrorIs(t, err, errDown)
	require.Equal(t, 5, remaining(t, r.secondary, "k"), "untouched")
	require.Equal(t, 4, remaining(t, r.primary.Limiter, "k"))
}

// TestRefundForeignCharge: a charge that names no part of the Limiter refunds nothing.
func TestRefundForeignCharge(t *testing.T) {
	r := newRig(t)
	charged := r.allowK(t, true)
	charged.Charge.Part = "tertiary"
	_, err := ins(r.l).Refund(context.Background(), "k", fiveAnHour, 1, charged.Charge)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	require.Equal(t, 4, remaining(t, r.primary.Limiter, "k"))
}

// TestRefundShare: a token the secondary took under this instance's share of the limit goes
// back to that share's bucket.
func TestRefundShare(t *testing.T) {
	r := newRig(t, fallback.WithInstances(2))
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 4}
	share := ratelimit.Limit{Rate: 1.0 / 7200, Burst: 2}
	r.primary.fail(nil)
	res, err := r.l.AllowN(ctx, "k", limit, 3) // more than the share: takes all of it
	require.NoError(t, err)
	require.True(t, res.Allowed)
	_, err = ins(r.l).Refund(ctx, "k", limit, 3, res.Charge)
	require.NoError(t, err)
	peek, err := r.secondary.Peek(ctx, "k", share, 2)
	require.NoError(t, err)
	require.True(t, peek.Allowed, "the share is full again")
}

// TestAllowAllCharges: AllowAll's admissions name the part that decided them, and a refund
// of one goes there.
func TestAllowAllCharges(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	reqs := []ratelimit.Request{{Key: "k", Limit: fiveAnHour}, {Key: "skipped"}}
	mr, err := multi(r.l).AllowAll(ctx, reqs)
	require.NoError(t, err)
	require.True(t, mr.Allowed)
	require.Equal(t, "primary", mr.Results[0].Charge.Part)
	require.Equal(t, ratelimit.Charge{}, mr.Results[1].Charge)

	r.primary.fail(nil)
	for range fallback.DefaultFailureThreshold {
		r.allow(t, roomy)
	}
	mr, err = multi(r.l).AllowAll(ctx, reqs)
	require.NoError(t, err)
	require.True(t, mr.Allowed)
	require.Equal(t, "secondary", mr.Results[0].Charge.Part)
	_, err = ins(r.l).Refund(ctx, "k", fiveAnHour, 1, mr.Results[0].Charge)
	require.NoError(t, err)
	require.Equal(t, 5, remaining(t, r.secondary, "k"))
	require.Equal(t, 4, remaining(t, r.primary.Limiter, "k"))
}

// TestNestedCharge: a fallback Limiter within another passes its own part of a charge on.
func TestNestedCharge(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	outer := fallback.New(r.l, newLocal(t, r.clock), fallback.WithClock(r.clock.Now))
	r.primary.fail(nil)
	for range fallback.DefaultFailureThreshold {
		r.allow(t, roomy)
	}
	res, err := outer.Allow(ctx, "k", fiveAnHour)
	require.NoError(t, err)
	require.Equal(t, "primary/secondary", res.Charge.Part)
	_, err = ins(outer).Refund(ctx, "k", fiveAnHour, 1, res.Charge)
	require.NoError(t, err)
	require.Equal(t, 5, remaining(t, r.secondary, "k"))
}
