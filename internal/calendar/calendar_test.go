package calendar_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/calendar"
)

// TestBounds: the period holding an instant, as local times of its zone. Each row is an
// instant and the period it must fall in, written out from the zone's rules.
func TestBounds(t *testing.T) {
	const layout = "2006-01-02 15:04:05.999999 -07:00"
	day := func(zone string) ratelimit.Period { return ratelimit.Period{Unit: ratelimit.Day, Zone: zone} }
	cases := []struct {
		p          ratelimit.Period
		at         string
		start, end string
	}{
		// Days: 24 hours, 23 on a spring forward, 25 on a fall back.
		{day("UTC"), "2026-06-15 12:00:00 +00:00", "2026-06-15 00:00:00 +00:00", "2026-06-16 00:00:00 +00:00"},
		{day("Europe/Paris"), "2026-03-29 12:00:00 +02:00", "2026-03-29 00:00:00 +01:00", "2026-03-30 00:00:00 +02:00"},
		{day("Europe/Paris"), "2026-10-25 02:30:00 +01:00", "2026-10-25 00:00:00 +02:00", "2026-10-26 00:00:00 +01:00"},
		{day("America/New_York"), "2026-11-01 01:30:00 -05:00", "2026-11-01 00:00:00 -04:00", "2026-11-02 00:00:00 -05:00"},
		// The first and the last microsecond of a day.
		{day("Asia/Kolkata"), "2026-01-01 00:00:00 +05:30", "2026-01-01 00:00:00 +05:30", "2026-01-02 00:00:00 +05:30"},
		{day("Asia/Kolkata"), "2026-01-01 23:59:59.999999 +05:30", "2026-01-01 00:00:00 +05:30", "2026-01-02 00:00:00 +05:30"},
		// Santiago skips midnight on 2026-09-06: that day starts at 01:00 −03:00, the change.
		{day("America/Santiago"), "2026-09-06 01:00:00 -03:00", "2026-09-06 01:00:00 -03:00", "2026-09-07 00:00:00 -03:00"},
		{day("America/Santiago"), "2026-09-05 23:59:59.999999 -04:00", "2026-09-05 00:00:00 -04:00", "2026-09-06 01:00:00 -03:00"},
		// Havana goes back from 01:00 to 00:00 on 2023-11-05: midnight comes twice, and the
		// day starts at the first.
		{day("America/Havana"), "2023-11-05 00:30:00 -05:00", "2023-11-05 00:00:00 -04:00", "2023-11-06 00:00:00 -05:00"},
		// Chatham, +12:45 in summer: a quarter-hour offset across the date line.
		{day("Pacific/Chatham"), "2026-01-01 00:00:00 +13:45", "2026-01-01 00:00:00 +13:45", "2026-01-02 00:00:00 +13:45"},
		// Weeks: ISO, from Monday; two weeks from Monday 1969-12-29, counted in pairs.
		{ratelimit.Period{Unit: ratelimit.Week, Zone: "UTC"}, "2026-12-31 23:00:00 +00:00", "2026-12-28 00:00:00 +00:00", "2027-01-04 00:00:00 +00:00"},
		{ratelimit.Period{Unit: ratelimit.Week, Zone: "Europe/Paris"}, "2026-03-29 23:59:00 +02:00", "2026-03-23 00:00:00 +01:00", "2026-03-30 00:00:00 +02:00"},
		{ratelimit.Period{Unit: ratelimit.Week, Count: 2, Zone: "UTC"}, "1970-01-12 00:00:00 +00:00", "1970-01-12 00:00:00 +00:00", "1970-01-26 00:00:00 +00:00"},
		{ratelimit.Period{Unit: ratelimit.Week, Count: 2, Zone: "UTC"}, "1970-01-11 23:59:59 +00:00", "1969-12-29 00:00:00 +00:00", "1970-01-12 00:00:00 +00:00"},
		// Days in threes from 1970-01-01: day 20,454 (2026-01-01) is 6,818 × 3.
		{ratelimit.Period{Unit: ratelimit.Day, Count: 3, Zone: "UTC"}, "2026-01-03 12:00:00 +00:00", "2026-01-01 00:00:00 +00:00", "2026-01-04 00:00:00 +00:00"},
		// Months: 28 to 31 days; 2028's February has 29.
		{ratelimit.Period{Unit: ratelimit.Month, Zone: "UTC"}, "2028-02-29 12:00:00 +00:00", "2028-02-01 00:00:00 +00:00", "2028-03-01 00:00:00 +00:00"},
		{ratelimit.Period{Unit: ratelimit.Month, Zone: "Europe/Paris"}, "2026-01-31 23:59:59.999999 +01:00", "2026-01-01 00:00:00 +01:00", "2026-02-01 00:00:00 +01:00"},
		{ratelimit.Period{Unit: ratelimit.Month, Zone: "America/New_York"}, "2026-12-31 23:00:00 -05:00", "2026-12-01 00:00:00 -05:00", "2027-01-01 00:00:00 -05:00"},
		// A billing month from the 15th; the 14th still belongs to the month before.
		{ratelimit.Period{Unit: ratelimit.Month, Anchor: 15, Zone: "UTC"}, "2026-01-14 23:59:59 +00:00", "2025-12-15 00:00:00 +00:00", "2026-01-15 00:00:00 +00:00"},
		{ratelimit.Period{Unit: ratelimit.Month, Anchor: 15, Zone: "UTC"}, "2026-01-15 00:00:00 +00:00", "2026-01-15 00:00:00 +00:00", "2026-02-15 00:00:00 +00:00"},
		// Quarters and years: 3 and 12 months from January.
		{ratelimit.Period{Unit: ratelimit.Month, Count: 3, Zone: "UTC"}, "2026-05-20 00:00:00 +00:00", "2026-04-01 00:00:00 +00:00", "2026-07-01 00:00:00 +00:00"},
		{ratelimit.Period{Unit: ratelimit.Month, Count: 12, Zone: "Asia/Kolkata"}, "2026-12-31 23:59:59 +05:30", "2026-01-01 00:00:00 +05:30", "2027-01-01 00:00:00 +05:30"},
		// Before 1970: floor division.
		{ratelimit.Period{Unit: ratelimit.Month, Count: 12, Zone: "UTC"}, "1969-06-01 00:00:00 +00:00", "1969-01-01 00:00:00 +00:00", "1970-01-01 00:00:00 +00:00"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%+v/%s", c.p, c.at), func(t *testing.T) {
			loc, err := time.LoadLocation(c.p.Zone)
			require.NoError(t, err)
			at, err := time.Parse(layout, c.at)
			require.NoError(t, err)
			start, end := calendar.Bounds(c.p, loc, at.UnixMicro())
			show := func(u int64) string { return time.UnixMicro(u).In(loc).Format(layout) }
			assert.Equal(t, c.start, show(start))
			assert.Equal(t, c.end, show(end))
		})
	}
}

// TestLengths is a Gregorian calendar's table: the lengths of the periods that hold each
// instant of 2026, local hour by hour, in zones with and without changes of offset. Every
// instant is in its period; a period's end is the next one's start.
func TestLengths(t *testing.T) {
	for _, zone := range []string{"UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "America/Santiago", "Australia/Lord_Howe"} {
		loc, err := time.LoadLocation(zone)
		require.NoError(t, err)
		lengths := map[ratelimit.PeriodUnit]map[time.Duration]int{ratelimit.Day: {}, ratelimit.Week: {}, ratelimit.Month: {}}
		for u := range lengths {
			p := ratelimit.Period{Unit: u, Zone: zone}
			seen := map[int64]bool{}
			for at := time.Date(2026, 1, 1, 0, 30, 0, 0, loc); at.In(loc).Year() < 2027; at = at.Add(time.Hour) {
				start, end := calendar.Bounds(p, loc, at.UnixMicro())
				require.True(t, start <= at.UnixMicro() && at.UnixMicro() < end, "%s %v: %v in [%d, %d)", zone, u, at, start, end)
				nextStart, _ := calendar.Bounds(p, loc, end)
				require.Equal(t, end, nextStart, "%s %v: periods meet", zone, u)
				if !seen[start] {
					seen[start] = true
					lengths[u][time.Duration(end-start)*time.Microsecond]++
				}
			}
		}
		t.Logf("%s: %v", zone, lengths)
		switch zone {
		case "UTC", "Asia/Kolkata":
			assert.Equal(t, map[time.Duration]int{24 * time.Hour: 365}, lengths[ratelimit.Day], zone)
			assert.Equal(t, map[time.Duration]int{28 * 24 * time.Hour: 1, 30 * 24 * time.Hour: 4, 31 * 24 * time.Hour: 7}, lengths[ratelimit.Month], zone)
		case "Europe/Paris", "America/New_York":
			assert.Equal(t, map[time.Duration]int{23 * time.Hour: 1, 24 * time.Hour: 363, 25 * time.Hour: 1}, lengths[ratelimit.Day], zone)
		case "Australia/Lord_Howe": // half-hour changes
			assert.Equal(t, map[time.Duration]int{23*time.Hour + 30*time.Minute: 1, 24 * time.Hour: 363, 24*time.Hour + 30*time.Minute: 1}, lengths[ratelimit.Day], zone)
		}
	}
}

func TestNominal(t *testing.T) {
	assert.Equal(t, int64(86_400), calendar.Nominal(ratelimit.Period{Unit: ratelimit.Day}))
	assert.Equal(t, int64(3*86_400), calendar.Nominal(ratelimit.Period{Unit: ratelimit.Day, Count: 3}))
	assert.Equal(t, int64(604_800), calendar.Nominal(ratelimit.Period{Unit: ratelimit.Week}))
	assert.Equal(t, int64(12*2_629_746), calendar.Nominal(ratelimit.Period{Unit: ratelimit.Month, Count: 12}))
}

func TestZones(t *testing.T) {
	var z calendar.Zones
	paris, id, err := z.Load("Europe/Paris")
	require.NoError(t, err)
	assert.Equal(t, "Europe/Paris", paris.String())
	assert.Equal(t, uint32(1), id)
	_, id2, err := z.Load("UTC")
	require.NoError(t, err)
	assert.Equal(t, uint32(2), id2)
	again, id, err := z.Load("Europe/Paris")
	require.NoError(t, err)
	assert.Same(t, paris, again)
	assert.Equal(t, uint32(1), id)
	for _, bad := range []string{"Mars/Olympus_Mons", "Local"} {
		_, _, err = z.Load(bad)
		assert.ErrorIs(t, err, ratelimit.ErrInvalidArgument, bad)
	}
}
