package ratelimittest

import (
	"context"
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
	{"CountPerLocalDay", quotaCountPerDay},
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
		// 22:30 +01:00
		step{advance: 23*hour + 30*time.Minute, want: denied(0, 90*time.Minute, 90*time.Minute)},
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
		// 01:30 −04:00
		{advance: 90 * time.Minute, want: allowed(0, 23*hour+30*time.Minute)},
		// 01:30 −05:00
		{advance: hour, want: denied(0, 22*hour+30*time.Minute, 22*hour+30*time.Minute)},
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

// quotaCountPerDay asks, every half hour through the changes of offset of 2026 in Paris,
// New York and Santiago, for a token of 5/day in each zone: every whole local day admits
// exactly 5, and each admission's ResetAfter is exactly the time to the next half hour that
// is on another local date (in these zones every midnight, and the skipped one's change,
// falls on the hour in UTC, so on the grid).
func quotaCountPerDay(t testing.TB, h harness) {
	zones := []string{"Europe/Paris", "America/New_York", "America/Santiago"}
	locs := make([]*time.Location, len(zones))
	limits := make([]ratelimit.Limit, len(zones))
	for i, z := range zones {
		var err error
		locs[i], err = time.LoadLocation(z)
		require.NoError(t, err)
		limits[i] = quota(t, "5/day@"+z)
	}
	const step = 30 * time.Minute
	date := func(at time.Time, loc *time.Location) string { return at.In(loc).Format(time.DateOnly) }
	now := NewClock().Now()
	for _, span := range [][2]time.Time{
		{time.Date(2026, 3, 5, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 10, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 9, 3, 0, 0, 0, 0, time.UTC), time.Date(2026, 9, 9, 0, 0, 0, 0, time.UTC)},
		{time.Date(2026, 10, 22, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 4, 0, 0, 0, 0, time.UTC)},
	} {
		h.Advance(span[0].Sub(now))
		now = span[0]
		admitted := make([]map[string]int, len(zones))
		for i := range admitted {
			admitted[i] = map[string]int{}
		}
		for ; now.Before(span[1]); now = now.Add(step) {
			for i, limit := range limits {
				res, err := h.Limiter.Allow(context.Background(), "days", limit)
				require.NoError(t, err)
				if !res.Allowed {
					continue
				}
				admitted[i][date(now, locs[i])]++
				next := now.Add(step)
				for date(next, locs[i]) == date(now, locs[i]) {
					next = next.Add(step)
				}
				require.Equal(t, next.Sub(now), res.ResetAfter, "%s at %v", zones[i], now.In(locs[i]))
			}
			h.Advance(step)
		}
		for i := range zones {
			first, last := date(span[0], locs[i]), date(span[1].Add(-step), locs[i])
			for d, n := range admitted[i] {
				if d != first && d != last { // whole days only
					require.Equal(t, 5, n, "%s on %s", zones[i], d)
				}
			}
		}
	}
}

// quotaKeepUsage: a quota with KeepUsage keeps its period's count when its Burst changes
// (a plan raised or cut in the middle of the day), and is another bucket under another
// period; without KeepUsage a changed quota is another bucket.
func quotaKeepUsage(t testing.TB, h harness) {
	day := func(n int) ratelimit.Limit {
		l := quota(t, "1/day@UTC keep-usage")
		l.Burst = n
		return l
	}
	left := 24 * hour // the clock's first reading is midnight UTC
	playKeep(t, h, "kept", []keepStep{
		{limit: day(5), n: 3, want: allowed(2, left)},
		{limit: day(10), want: allowed(6, left)},      // 4 spent of 10
		{limit: day(4), want: denied(0, left, left)},  // 4 spent: none left under 4
		{limit: day(3), want: denied(0, left, left)},  // more spent than 3: still spent
		{limit: day(6), n: 2, want: allowed(0, left)}, // 6 spent of 6
		// a new day: the count of the new period
		{advance: left, limit: day(6), want: allowed(5, left)},
	})
	// Another period is another bucket; so is the quota without KeepUsage.
	week := quota(t, "3/week@UTC keep-usage")
	plain := quota(t, "3/day@UTC")
	for _, l := range []ratelimit.Limit{week, plain} {
		res, err := h.Limiter.Allow(context.Background(), "kept", l)
		require.NoError(t, err)
		require.Equal(t, 2, res.Remaining, "%v is a bucket of its own", l)
	}
}
