package ratelimittest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// quotaRules are the rules of ratelimit.CalendarQuota: at most Burst per period of the
// calendar, from local midnight to local midnight in the period's zone, whatever that is in
// UTC; RetryAfter runs to the period's end, and so does ResetAfter while the period has
// counted anything, exact to the microsecond across changes of offset. Run runs them when
// the Harness declares Quotas.
//
// Each timeline moves the clock from its first reading, 2026-01-01T00:00:00Z, to the
// instant it starts at, written in the zone's local time; the durations expected are
// written out, not computed, from the zone's rules (the tzdata of 2026).
var quotaRules = []rule{
	{"ParisSpringForward", quotaParisSpring},
	{"ParisFallBack", quotaParisFall},
	{"NewYorkSpringForward", quotaNewYorkSpring},
	{"NewYorkFallBack", quotaNewYorkFall},
	{"KolkataHalfHour", quotaKolkata},
	{"SantiagoSkippedMidnight", quotaSantiago},
	{"MonthEnd", quotaMonthEnd},
	{"LeapDay2028", quotaLeapDay},
	{"YearEndWeek", quotaYearEnd},
	{"BillingMonth", quotaBillingMonth},
	{"BucketIdentity", quotaIdentity},
	{"AllowAllWithRate", quotaAllowAll},
	{"Inspector", quotaInspector},
	{"Priority", quotaPriority},
	{"UnknownZone", quotaUnknownZone},
}

const hour = time.Hour

// quota parses text, a quota, or fails t.
func quota(t testing.TB, text string) ratelimit.Limit {
	t.Helper()
	l, err := ratelimit.ParseLimit(text)
	require.NoError(t, err)
	return l
}

// moveTo moves h's clock, at its first reading, to y-m-d h:mi:s.us in zone.
func moveTo(t testing.TB, h harness, zone string, y int, m time.Month, d, hh, mi, s, us int) {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	require.NoError(t, err)
	at := time.Date(y, m, d, hh, mi, s, us*1000, loc)
	require.Equal(t, hh, at.Hour(), "%v: a local time that exists", at)
	h.Advance(at.Sub(NewClock().Now()))
}

// full returns the steps that spend a quota of n in one request each, the period ending
// in left, then one denial.
func spend(n int, left time.Duration) []step {
	var steps []step
	for i := range n {
		steps = append(steps, step{want: allowed(n-1-i, left)})
	}
	return append(steps, step{want: denied(0, left, left)})
}

// quotaParisSpring: on 2026-03-29 Paris moves from +01:00 to +02:00 at 02:00: the day
// has 23 hours, and exactly 3 pass in it.
func quotaParisSpring(t testing.TB, h harness) {
	limit := quota(t, "3/day@Europe/Paris")
	moveTo(t, h, "Europe/Paris", 2026, time.March, 28, 23, 0, 0, 0)
	steps := spend(3, hour) // Saturday's last hour
	steps = append(steps,
		step{advance: hour, want: allowed(2, 23*hour)}, // Sunday 00:00 +01:00: 23 hours long
		step{n: 2, want: allowed(0, 23*hour)},
		step{advance: 2 * hour, want: denied(0, 21*hour, 21*hour)}, // 03:00 +02:00, two hours on
		step{advance: 21*hour - time.Microsecond, want: denied(0, time.Microsecond, time.Microsecond)},
		step{advance: time.Microsecond, want: allowed(2, 24*hour)}, // Monday 00:00 +02:00
	)
	play(t, h, "spring", limit, steps)
}

// quotaParisFall: on 2026-10-25 Paris moves back to +01:00 at 03:00: 25 hours.
func quotaParisFall(t testing.TB, h harness) {
	limit := quota(t, "3/day@Europe/Paris")
	moveTo(t, h, "Europe/Paris", 2026, time.October, 25, 0, 0, 0, 0)
	steps := spend(3, 25*hour)
	steps = append(steps,
		step{advance: 23*hour + 30*time.Minute, want: denied(0, 90*time.Minute, 90*time.Minute)}, // 22:30 +01:00
		step{advance: 90*time.Minute - time.Microsecond, want: denied(0, time.Microsecond, time.Microsecond)},
		step{advance: time.Microsecond, n: 3, want: allowed(0, 24*hour)},
	)
	play(t, h, "fall", limit, steps)
}

// quotaNewYorkSpring: on 2026-03-08 New York moves from −05:00 to −04:00 at 02:00.
func quotaNewYorkSpring(t testing.TB, h harness) {
	limit := quota(t, "2/day@America/New_York")
	moveTo(t, h, "America/New_York", 2026, time.March, 7, 23, 0, 0, 0)
	steps := spend(2, hour)
	steps = append(steps, step{advance: hour, want: allowed(1, 23*hour)})
	steps = append(steps, step{want: allowed(0, 23*hour)}, step{want: denied(0, 23*hour, 23*hour)})
	steps = append(steps,
		step{advance: 23*hour - time.Microsecond, want: denied(0, time.Microsecond, time.Microsecond)},
		step{advance: time.Microsecond, want: allowed(1, 24*hour)},
	)
	play(t, h, "spring", limit, steps)
}

// quotaNewYorkFall: on 2026-11-01 New York moves back to −05:00 at 02:00: 01:30 comes
// twice, in one day of 25 hours.
func quotaNewYorkFall(t testing.TB, h harness) {
	limit := quota(t, "2/day@America/New_York")
	moveTo(t, h, "America/New_York", 2026, time.November, 1, 0, 0, 0, 0)
	play(t, h, "fall", limit, []step{
		{want: allowed(1, 25*hour)},
		{advance: 90 * time.Minute, want: allowed(0, 23*hour+30*time.Minute)},            // 01:30 −04:00
		{advance: hour, want: denied(0, 22*hour+30*time.Minute, 22*hour+30*time.Minute)}, // 01:30 −05:00
		{advance: 22*hour + 30*time.Minute, want: allowed(1, 24*hour)},
	})
}

// quotaKolkata: +05:30, no changes: the clock's first reading, 00:00Z, is 05:30 there.
func quotaKolkata(t testing.TB, h harness) {
	limit := quota(t, "2/day@Asia/Kolkata")
	left := 18*hour + 30*time.Minute
	steps := spend(2, left)
	steps = append(steps,
		step{advance: left - time.Microsecond, want: denied(0, time.Microsecond, time.Microsecond)},
		step{advance: time.Microsecond, want: allowed(1, 24*hour)},
	)
	play(t, h, "kolkata", limit, steps)
}

// quotaSantiago: on 2026-09-06 Santiago moves from −04:00 to −03:00 at 00:00: that
// midnight never happens, and the day starts at 01:00 −03:00, the instant of the change,
// 23 hours before the next midnight.
func quotaSantiago(t testing.TB, h harness) {
	limit := quota(t, "1/day@America/Santiago")
	moveTo(t, h, "America/Santiago", 2026, time.September, 5, 23, 0, 0, 0)
	play(t, h, "skipped", limit, []step{
		{want: allowed(0, hour)},
		{advance: hour - time.Microsecond, want: denied(0, time.Microsecond, time.Microsecond)},
		{advance: time.Microsecond, want: allowed(0, 23*hour)}, // 01:00 −03:00
		{want: denied(0, 23*hour, 23*hour)},
		{advance: 23 * hour, want: allowed(0, 24*hour)},
	})
}

// quotaMonthEnd: a month in Paris from January 31 to February 1, and February 2026's 28
// days; the day quota alongside turns over at the same instant.
func quotaMonthEnd(t testing.TB, h harness) {
	month := quota(t, "2/month@Europe/Paris")
	day := quota(t, "1/day@Europe/Paris")
	moveTo(t, h, "Europe/Paris", 2026, time.January, 31, 23, 59, 59, 0)
	play(t, h, "month", month, spend(2, time.Second))
	play(t, h, "day", day, spend(1, time.Second))
	h.Advance(time.Second)
	play(t, h, "month", month, []step{{want: allowed(1, 28*24*hour)}})
	play(t, h, "day", day, []step{{want: allowed(0, 24*hour)}})
}

// quotaLeapDay: 2028 is a leap year: February 29 is a day of its own, and February a
// month of 29 days.
func quotaLeapDay(t testing.TB, h harness) {
	day := quota(t, "1/day@UTC")
	month := quota(t, "1/month@UTC")
	moveTo(t, h, "UTC", 2028, time.February, 28, 12, 0, 0, 0)
	play(t, h, "day", day, spend(1, 12*hour))
	play(t, h, "month", month, spend(1, (12+24)*hour))
	play(t, h, "day", day, []step{
		{advance: 12 * hour, want: allowed(0, 24*hour)}, // February 29
		{advance: 24 * hour, want: allowed(0, 24*hour)}, // March 1
	})
	play(t, h, "month", month, []step{{want: allowed(0, 31*24*hour)}})
}

// quotaYearEnd: the ISO week of 2026-12-31, a Thursday, runs from Monday December 28 to
// Monday January 4, 73 hours after Thursday 23:00: the new year does not start a new week,
// and does start a new day.
func quotaYearEnd(t testing.TB, h harness) {
	week := quota(t, "2/week@Europe/Paris")
	day := quota(t, "1/day@Europe/Paris")
	moveTo(t, h, "Europe/Paris", 2026, time.December, 31, 23, 0, 0, 0)
	play(t, h, "week", week, []step{{want: allowed(1, (3*24+1)*hour)}})
	play(t, h, "day", day, spend(1, hour))
	h.Advance(hour)
	play(t, h, "week", week, []step{{want: allowed(0, 3*24*hour)}, {want: denied(0, 3*24*hour, 3*24*hour)}})
	play(t, h, "day", day, []step{{want: allowed(0, 24*hour)}})
}

// quotaBillingMonth: a month from the 15th, across Paris's change to summer time: from
// 2026-03-20 12:00 +01:00 to 2026-04-15 00:00 +02:00 is 25 days and 11 hours.
func quotaBillingMonth(t testing.TB, h harness) {
	limit := quota(t, "3/month@Europe/Paris anchor 15")
	moveTo(t, h, "Europe/Paris", 2026, time.March, 20, 12, 0, 0, 0)
	left := (25*24 + 11) * hour
	steps := spend(3, left)
	steps = append(steps,
		step{advance: left - time.Microsecond, want: denied(0, time.Microsecond, time.Microsecond)},
		step{advance: time.Microsecond, want: allowed(2, 30*24*hour)}, // April 15 to May 15
	)
	play(t, h, "billing", limit, steps)
}

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
	ml, ok := h.Limiter.(ratelimit.MultiLimiter)
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
	ins, ok := h.Limiter.(ratelimit.Inspector)
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
	l := h.Reserves(ratelimit.Reserves{})
	limit := quota(t, "10/day@Asia/Kolkata")
	left := 18*hour + 30*time.Minute
	playPriority(t, h, l, "p", limit, []pstep{
		{p: ratelimit.Sheddable, n: 5, want: allowed(0, left)},
		{p: ratelimit.Sheddable, want: denied(0, left, left)},
		{p: ratelimit.Normal, n: 4, want: allowed(0, left)},
		{p: ratelimit.Normal, want: denied(0, left, left)},
		{p: ratelimit.Critical, want: allowed(0, left)},
		{p: ratelimit.Critical, want: denied(0, left, left)},
	})
}

// quotaUnknownZone: a zone the database lacks is refused as an invalid limit, by
// ValidateLimit and by every call.
func quotaUnknownZone(t testing.TB, h harness) {
	limit := ratelimit.Quota(1, ratelimit.Period{Unit: ratelimit.Day, Zone: "Mars/Olympus_Mons"})
	require.NoError(t, limit.Validate(), "a name Validate cannot refuse")
	if v, ok := h.Limiter.(ratelimit.LimitValidator); ok {
		require.ErrorIs(t, v.ValidateLimit(limit), ratelimit.ErrInvalidLimit)
	}
	res, err := h.Limiter.Allow(context.Background(), "zone", limit)
	require.ErrorIs(t, err, ratelimit.ErrInvalidLimit)
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
func quotaGap(rng *rand.Rand, limit ratelimit.Limit) (float64, int, ratelimit.Priority, bool) {
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
	return gap, cost(rng, limit), ratelimit.Priority(rng.IntN(3)), rng.IntN(2) == 0
}
