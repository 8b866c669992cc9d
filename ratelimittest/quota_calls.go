package ratelimittest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// The rules of calendar quotas beside the other calls and features: identity, AllowAll,
// the Inspector, priorities, and the limits Agree plays (see quotaRules).

// quotaIdentity: a quota's bucket is (key, quota, period): another zone, unit, count or
// anchor is another bucket, and a rate limit of the same key too; a Count or Anchor of 1
// is the one of zero.
func quotaIdentity(t testing.TB, h harness) {
	paris := quota(t, "1/day@Europe/Paris")
	left := 23 * hour // the clock's first reading is 01:00 in Paris
	play(t, h, "id", paris, spend(1, left))
	one := paris
	one.Period.Count = 1
	play(t, h, "id", one, []step{{want: denied(0, left, left)}})
	for _, other := range []string{"2/day@Europe/Paris", "1/day@Europe/Berlin", "1/week@Europe/Paris",
		"1/2day@Europe/Paris", "1/month@Europe/Paris", "1/month@Europe/Paris anchor 2"} {
		l := quota(t, other)
		res, err := h.Limiter.Allow(context.Background(), "id", l)
		require.NoError(t, err, other)
		require.True(t, res.Allowed, "%s is a bucket of its own", other)
	}
	anchored := quota(t, "1/month@Europe/Paris")
	anchored.Period.Anchor = 1
	res, err := h.Limiter.Allow(context.Background(), "id", anchored)
	require.NoError(t, err)
	require.False(t, res.Allowed, "anchor 1 is the month from the 1st")
	rate := ratelimit.Limit{Rate: 1.0 / 86400, Burst: 1}
	res, err = h.Limiter.Allow(context.Background(), "id", rate)
	require.NoError(t, err)
	require.True(t, res.Allowed, "a rate limit is another bucket")
}

// quotaAllowAll: a quota and a rate limit together, all or nothing: the quota binds once
// spent, and a denial takes nothing from the rate limit.
func quotaAllowAll(t testing.TB, h harness) {
	ml, ok := ratelimit.As[ratelimit.MultiLimiter](h.Limiter)
	if !ok {
		t.Skip("not a MultiLimiter")
	}
	day := quota(t, "2/day@UTC")
	rate := ratelimit.Limit{Rate: 10, Burst: 10}
	reqs := []ratelimit.Request{{Key: "all", Limit: rate}, {Key: "all", Limit: day}}
	ctx := context.Background()
	for i := range 2 {
		mr, err := ml.AllowAll(ctx, reqs)
		require.NoError(t, err)
		require.True(t, mr.Allowed, "request %d", i)
		require.Equal(t, 1-i, mr.Results[1].Remaining)
		require.Equal(t, 24*hour, mr.Results[1].ResetAfter)
	}
	mr, err := ml.AllowAll(ctx, reqs)
	require.NoError(t, err)
	require.False(t, mr.Allowed)
	require.Equal(t, 1, mr.Binding)
	require.Equal(t, 24*hour, mr.Results[1].RetryAfter)
	// The rate limit gave 2 of its 10, and the denial took nothing from it.
	res, err := h.Limiter.AllowN(ctx, "all", rate, 8)
	require.NoError(t, err)
	require.True(t, res.Allowed)
}

// quotaInspector: Peek, Refund and Reset on a quota. A refund gives back to the period
// its charge was made in, while that period lasts; in the next, nothing.
func quotaInspector(t testing.TB, h harness) {
	ins, ok := ratelimit.As[ratelimit.Inspector](h.Limiter)
	if !ok {
		t.Skip("not an Inspector")
	}
	ctx := context.Background()
	limit := quota(t, "3/day@America/New_York") // 00:00Z is 19:00 there: 5 hours left
	left := 5 * hour
	peek, err := ins.Peek(ctx, "ins", limit, 1)
	require.NoError(t, err)
	require.Equal(t, ratelimit.Result{Allowed: true, Limit: limit, Remaining: 2, ResetAfter: left}, peek, "a new bucket, as AllowN would say")
	res, err := h.Limiter.AllowN(ctx, "ins", limit, 3)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	charge := res.Charge
	h.Advance(hour)
	got, err := ins.Refund(ctx, "ins", limit, 2, charge)
	require.NoError(t, err)
	require.Equal(t, ratelimit.Result{Allowed: true, Limit: limit, Remaining: 1, ResetAfter: left - hour}, got)
	require.NoError(t, ins.Reset(ctx, "ins", limit))
	play(t, h, "ins", limit, []step{{n: 3, want: allowed(0, left-hour)}})
	// In the next day the charge is gone with its day: nothing comes back.
	h.Advance(left - hour)
	play(t, h, "ins", limit, []step{{n: 3, want: allowed(0, 24*hour)}})
	got, err = ins.Refund(ctx, "ins", limit, 3, charge)
	require.NoError(t, err)
	require.Equal(t, ratelimit.Result{Limit: limit, RetryAfter: 24 * hour, ResetAfter: 24 * hour}, got)
}

// quotaPriority: the reserves of priorities hold back part of a quota, as of any burst:
// of 10, a Sheddable request leaves 5 and a Normal one 1.
func quotaPriority(t testing.TB, h harness) {
	if h.Reserves == nil {
		t.Skip("the harness declares no reserves")
	}
	l := h.Reserves(priority.Reserves{})
	limit := quota(t, "10/day@Asia/Kolkata")
	left := 18*hour + 30*time.Minute
	playPriority(t, h, l, "p", limit, []pstep{
		{p: priority.Sheddable, n: 5, want: allowed(0, left)},
		{p: priority.Sheddable, want: denied(0, left, left)},
		{p: priority.Normal, n: 4, want: allowed(0, left)},
		{p: priority.Normal, want: denied(0, left, left)},
		{p: priority.Critical, want: allowed(0, left)},
		{p: priority.Critical, want: denied(0, left, left)},
	})
}

// quotaUnknownZone: a zone the database lacks is refused as an invalid limit, by
// Limit.Validate, ValidateLimit and every call.
func quotaUnknownZone(t testing.TB, h harness) {
	limit := ratelimit.Quota(1, ratelimit.Period{Unit: ratelimit.Day, Zone: "Mars/Olympus_Mons"})
	require.ErrorIs(t, limit.Validate(), ratelimit.ErrInvalidArgument)
	if v, ok := ratelimit.As[ratelimit.LimitValidator](h.Limiter); ok {
		require.ErrorIs(t, v.ValidateLimit(limit), ratelimit.ErrInvalidArgument)
	}
	res, err := h.Limiter.Allow(context.Background(), "zone", limit)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	require.Equal(t, ratelimit.Result{Limit: limit}, res)
}

// quotaLimits are the calendar quotas Agree plays: every unit, counts, an anchor, in zones
// with changes of offset of an hour, half an hour and at midnight.
func quotaLimits(t testing.TB) []ratelimit.Limit {
	var limits []ratelimit.Limit
	for _, text := range []string{"3/day@Europe/Paris", "1/day@America/Santiago", "7/2day@Australia/Lord_Howe",
		"20/week@America/New_York", "5/month@Asia/Kolkata anchor 28", "2/3month@Europe/London anchor 15"} {
		limits = append(limits, quota(t, text))
	}
	return limits
}

// quotaGap: nothing, a few µs, up to an hour, up to a day, up to forty days; a random
// priority one request in two.
func quotaGap(rng *rand.Rand, limit ratelimit.Limit) (float64, int, priority.Level, bool) {
	var gap float64
	switch rng.IntN(5) {
	case 1:
		gap = float64(rng.IntN(3))
	case 2:
		gap = rng.Float64() * 3.6e9
	case 3:
		gap = rng.Float64() * 8.64e10
	case 4:
		gap = rng.Float64() * 40 * 8.64e10
	}
	return gap, cost(rng, limit), priority.Level(rng.IntN(3)), rng.IntN(2) == 0
}
