package ratelimit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

func TestParseQuota(t *testing.T) {
	paris := ratelimit.Period{Unit: ratelimit.Day, Zone: "Europe/Paris"}
	cases := []struct {
		text string
		want ratelimit.Limit
		back string // String, when not text
	}{
		{"10000/day@Europe/Paris", ratelimit.Quota(10000, paris), ""},
		{"10000/d@Europe/Paris", ratelimit.Quota(10000, paris), "10000/day@Europe/Paris"},
		{"10000/1day@Europe/Paris", ratelimit.Quota(10000, paris), "10000/day@Europe/Paris"},
		{"5/2week@UTC", ratelimit.Quota(5, ratelimit.Period{Unit: ratelimit.Week, Count: 2, Zone: "UTC"}), ""},
		{"1000000/month@America/New_York anchor 15",
			ratelimit.Quota(1_000_000, ratelimit.Period{Unit: ratelimit.Month, Anchor: 15, Zone: "America/New_York"}), ""},
		{"3/mo@Asia/Kolkata anchor 1", ratelimit.Quota(3, ratelimit.Period{Unit: ratelimit.Month, Zone: "Asia/Kolkata"}), "3/month@Asia/Kolkata"},
	}
	for _, c := range cases {
		got, err := ratelimit.ParseLimit(c.text)
		require.NoError(t, err, c.text)
		assert.Equal(t, c.want, got, c.text)
		back := c.back
		if back == "" {
			back = c.text
		}
		assert.Equal(t, back, got.String())
		assert.Equal(t, ratelimit.Limit{Burst: 10000, Algorithm: ratelimit.CalendarQuota, Period: paris}, ratelimit.Quota(10000, paris))
	}
	bad := map[string]string{
		"10/day@Mars/Olympus":    `ratelimit: invalid limit: time zone "Mars/Olympus" is not in the time zone database (import time/tzdata to embed one) (in "10/day@Mars/Olympus")`,
		"10/day@Local":           `ratelimit: invalid limit: "10/day@Local": time zone "Local" is not the name of a zone such as Europe/Paris or UTC`,
		"10/day@":                `ratelimit: invalid limit: "10/day@": time zone "" is not the name of a zone such as Europe/Paris or UTC`,
		"10/year@UTC":            `ratelimit: invalid limit: "10/year@UTC": unknown period "year" (day, week or month)`,
		"2.5/day@UTC":            `ratelimit: invalid limit: "2.5/day@UTC": a quota's count 2.5 is not a whole number of at most 2^52`,
		"10/0day@UTC":            `ratelimit: invalid limit: "10/0day@UTC": period count "0" is not between 1 and 1000`,
		"10/day@UTC burst 20":    `ratelimit: invalid limit: "10/day@UTC burst 20": "burst" on a calendar quota (only anchor DAY)`,
		"10/day@UTC sliding-log": `ratelimit: invalid limit: "10/day@UTC sliding-log": "sliding-log" on a calendar quota (only anchor DAY)`,
		"10/day@UTC anchor 15":   `ratelimit: invalid limit: "10/day@UTC anchor 15": anchor "15" is not a day of the month between 1 and 28, on a period of months`,
		"10/month@UTC anchor 29": `ratelimit: invalid limit: "10/month@UTC anchor 29": anchor "29" is not a day of the month between 1 and 28, on a period of months`,
		"10/day@Europe/Paris:x":  `ratelimit: invalid limit: "10/day@Europe/Paris:x": time zone "Europe/Paris:x" is not the name of a zone such as Europe/Paris or UTC`,
	}
	for text, want := range bad {
		_, err := ratelimit.ParseLimit(text)
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, text)
		assert.EqualError(t, err, want)
	}
}

func TestValidateQuota(t *testing.T) {
	day := ratelimit.Period{Unit: ratelimit.Day, Zone: "UTC"}
	valid := []ratelimit.Limit{
		ratelimit.Quota(1, day),
		ratelimit.Quota(args.MaxBurst, ratelimit.Period{Unit: ratelimit.Month, Count: 1000, Anchor: 28, Zone: "Asia/Kolkata"}),
		ratelimit.Quota(1, ratelimit.Period{Unit: ratelimit.Week, Count: 1, Zone: "America/Santiago"}),
	}
	for _, l := range valid {
		assert.NoError(t, l.Validate(), "%+v", l)
	}
	invalid := map[string]ratelimit.Limit{
		"a period with TokenBucket: only CalendarQuota has one":                   {Rate: 1, Burst: 1, Algorithm: ratelimit.TokenBucket, Period: day},
		"a period with DefaultAlgorithm: only CalendarQuota has one":              {Rate: 1, Burst: 1, Period: day},
		"rate 1 on a calendar quota, which has none: it must be zero":             {Rate: 1, Burst: 1, Algorithm: ratelimit.CalendarQuota, Period: day},
		"quota 0 is not between 1 and 2^52":                                       ratelimit.Quota(0, day),
		"a warm-up on a calendar quota":                                           {Burst: 1, Warmup: 1000, Algorithm: ratelimit.CalendarQuota, Period: day},
		"period unit 0 is not Day, Week or Month":                                 ratelimit.Quota(1, ratelimit.Period{Zone: "UTC"}),
		"period unit 4 is not Day, Week or Month":                                 ratelimit.Quota(1, ratelimit.Period{Unit: 4, Zone: "UTC"}),
		"period count 1001 is not between 0 (one) and 1000":                       ratelimit.Quota(1, ratelimit.Period{Unit: ratelimit.Day, Count: 1001, Zone: "UTC"}),
		"an anchor on a period of days or weeks: only months have one":            ratelimit.Quota(1, ratelimit.Period{Unit: ratelimit.Week, Anchor: 2, Zone: "UTC"}),
		"anchor 29 is not a day of the month between 1 and 28":                    ratelimit.Quota(1, ratelimit.Period{Unit: ratelimit.Month, Anchor: 29, Zone: "UTC"}),
		`time zone "" is not the name of a zone such as Europe/Paris or UTC`:      ratelimit.Quota(1, ratelimit.Period{Unit: ratelimit.Day}),
		`time zone "Local" is not the name of a zone such as Europe/Paris or UTC`: ratelimit.Quota(1, ratelimit.Period{Unit: ratelimit.Day, Zone: "Local"}),
	}
	for want, l := range invalid {
		err := l.Validate()
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, want)
		assert.EqualError(t, err, "ratelimit: invalid limit: "+want)
	}
	// A quota is a map key with value semantics: two parsed from one text are one key.
	a, _ := ratelimit.ParseLimit("10000/day@Europe/Paris")
	b, _ := ratelimit.ParseLimit("10000/day@Europe/Paris")
	assert.True(t, map[ratelimit.Limit]bool{a: true}[b])
	assert.Equal(t, "CalendarQuota", ratelimit.CalendarQuota.String())
}

// Validate and ParseLimit agree on time zones: a zone the database lacks is refused by
// both, as is "Local" and a name that is not one.
func TestQuotaZoneValidateAgrees(t *testing.T) {
	for _, zone := range []string{"UTC", "Europe/Paris", "America/Argentina/Buenos_Aires", "Etc/GMT+5",
		"Mars/Olympus_Mons", "Europe/Pariss", "Local", "", "../etc/passwd"} {
		_, perr := ratelimit.ParseLimit("10/day@" + zone)
		verr := ratelimit.Quota(10, ratelimit.Period{Unit: ratelimit.Day, Zone: zone}).Validate()
		assert.Equal(t, perr == nil, verr == nil, "zone %q: ParseLimit %v, Validate %v", zone, perr, verr)
		if verr != nil {
			assert.ErrorIs(t, verr, ratelimit.ErrInvalidArgument)
		}
	}
	err := ratelimit.Quota(10, ratelimit.Period{Unit: ratelimit.Day, Zone: "Mars/Olympus_Mons"}).Validate()
	assert.EqualError(t, err, `ratelimit: invalid limit: time zone "Mars/Olympus_Mons" is not in the time zone database (import time/tzdata to embed one)`)
}
