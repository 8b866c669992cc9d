package ratelimit_test

import (
	"encoding/json"
	"errors"
	"flag"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

func TestConstructors(t *testing.T) {
	assert.Equal(t, ratelimit.Limit{Rate: 10, Burst: 10}, ratelimit.PerSecond(10))
	assert.Equal(t, ratelimit.Limit{Rate: 2.0 / 60, Burst: 2}, ratelimit.PerMinute(2))
	assert.Equal(t, ratelimit.Limit{Rate: 100.0 / 3600, Burst: 100}, ratelimit.PerHour(100))
}

func TestValidate(t *testing.T) {
	valid := []ratelimit.Limit{
		ratelimit.PerSecond(1), ratelimit.PerHour(1), {Rate: 1e-9, Burst: 1}, {Rate: 1e6, Burst: 1e9},
		{Rate: 1, Burst: 1, Warmup: time.Microsecond}, {Rate: 1, Burst: 1, Warmup: args.MaxWarmup},
		{Rate: 1, Burst: 1, Algorithm: ratelimit.TokenBucket}, {Rate: 1, Burst: 1, Algorithm: ratelimit.LeakyBucket},
		// A warm-up with another algorithm is a limit; the backends refuse it (ErrNotSupported).
		{Rate: 1, Burst: 1, Warmup: time.Second, Algorithm: ratelimit.FixedWindow},
	}
	for _, l := range valid {
		assert.NoError(t, l.Validate(), l)
	}
	invalid := []ratelimit.Limit{
		{}, ratelimit.PerSecond(0), ratelimit.PerMinute(-1),
		{Rate: math.NaN(), Burst: 1}, {Rate: math.Inf(1), Burst: 1}, {Rate: math.Inf(-1), Burst: 1},
		{Rate: -1, Burst: 1}, {Rate: 1, Burst: 0}, {Rate: 1, Burst: -5},
		{Rate: 1, Burst: args.MaxBurst + 1},
		{Rate: 1, Burst: 1, Warmup: -time.Microsecond}, {Rate: 1, Burst: 1, Warmup: 1500 * time.Nanosecond},
		{Rate: 1, Burst: 1, Warmup: args.MaxWarmup + time.Microsecond},
		{Rate: 1, Burst: 1, Algorithm: ratelimit.LeakyBucket + 1}, {Rate: 1, Burst: 1, Algorithm: -1},
		{Algorithm: ratelimit.TokenBucket},
	}
	for _, l := range invalid {
		err := l.Validate()
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, l)
	}
	assert.EqualError(t, ratelimit.Limit{Rate: 1}.Validate(), "ratelimit: invalid limit: burst 0 is less than 1")
	assert.EqualError(t, ratelimit.Limit{Rate: 1, Burst: 1 << 53}.Validate(),
		"ratelimit: invalid limit: burst 9007199254740992 is more than 2^52")
	require.NoError(t, ratelimit.Limit{Rate: 1, Burst: args.MaxBurst}.Validate())
	assert.EqualError(t, ratelimit.Limit{Rate: -2, Burst: 1}.Validate(),
		"ratelimit: invalid limit: rate -2 is not a finite number greater than zero")
	assert.EqualError(t, ratelimit.Limit{Rate: 1, Burst: 1, Warmup: time.Nanosecond}.Validate(),
		"ratelimit: invalid limit: warm-up 1ns is not a whole number of microseconds between 0 and 2^53 µs")
	assert.Equal(t, time.Duration(1<<53)*time.Microsecond, args.MaxWarmup)
	// An algorithm that is none of the constants is no limit at all, not one a backend lacks.
	assert.EqualError(t, ratelimit.Limit{Rate: 1, Burst: 1, Algorithm: 9}.Validate(),
		"ratelimit: invalid limit: Algorithm(9) is not one of the ratelimit package's algorithms")
}

func TestLimitString(t *testing.T) {
	cases := []struct {
		limit ratelimit.Limit
		want  string
	}{
		{ratelimit.PerSecond(10), "10/s"},
		{ratelimit.PerMinute(2), "2/min"},
		{ratelimit.PerMinute(100), "100/min"},
		{ratelimit.PerHour(30), "30/h"},
		{ratelimit.Limit{Rate: 1, Burst: 2}, "1/s burst 2"},
		{ratelimit.Limit{Rate: 1.5, Burst: 3}, "90/min burst 3"},
		{ratelimit.Limit{Rate: 0.7, Burst: 3}, "42/min burst 3"},
		// 0.9/h does not read back exactly
		{ratelimit.Limit{Rate: 2.5e-4, Burst: 3}, "21.6/day burst 3"},
		{ratelimit.Limit{Rate: 1.0 / 86400, Burst: 1}, "1/day"},
		{ratelimit.Limit{Rate: 0.5, Burst: 1}, "30/min burst 1"},
		{ratelimit.Limit{Rate: 0.123456789, Burst: 3}, "7.40740734/min burst 3"},
		{ratelimit.Limit{Rate: math.Pi, Burst: 3}, "3.141592653589793/s burst 3"},
		{ratelimit.Limit{}, "0/s burst 0"},
		{ratelimit.Limit{Rate: -2, Burst: 1}, "-2/s burst 1"},
		{ratelimit.Limit{Rate: math.Inf(1), Burst: 1}, "+Inf/s burst 1"},
		{ratelimit.Limit{Rate: math.NaN(), Burst: 1}, "NaN/s burst 1"},
		{ratelimit.Limit{Rate: 10, Burst: 10, Warmup: 30 * time.Second}, "10/s warm-up 30s"},
		{ratelimit.Limit{Rate: 10, Burst: 20, Algorithm: ratelimit.FixedWindow, KeepUsage: true}, "10/s burst 20 fixed-window keep-usage"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.limit.String())
	}
}

// ParseLimit reads what String writes, and the usual ways of writing a limit.
func TestParseLimit(t *testing.T) {
	cases := []struct {
		text string
		want ratelimit.Limit
	}{
		{"100/min", ratelimit.PerMinute(100)},
		{"10/s burst 20", ratelimit.Limit{Rate: 10, Burst: 20}},
		{"5/h", ratelimit.PerHour(5)},
		{"1000/day", ratelimit.Limit{Rate: 1000.0 / 86400, Burst: 1000}},
		{"0.5/s", ratelimit.Limit{Rate: 0.5, Burst: 1}},
		{"2.5/s", ratelimit.Limit{Rate: 2.5, Burst: 3}},
		{"  10/second   burst 3 ", ratelimit.Limit{Rate: 10, Burst: 3}},
		{"1/d", ratelimit.Limit{Rate: 1.0 / 86400, Burst: 1}},
		{"10/s warm-up 30s", ratelimit.Limit{Rate: 10, Burst: 10, Warmup: 30 * time.Second}},
		{"10/s burst 5 warmup 1m30s", ratelimit.Limit{Rate: 10, Burst: 5, Warmup: 90 * time.Second}},
		{"100/min sliding-log", ratelimit.Limit{Rate: 100.0 / 60, Burst: 100, Algorithm: ratelimit.SlidingWindowLog}},
		{"10/s burst 20 leaky-bucket", ratelimit.Limit{Rate: 10, Burst: 20, Algorithm: ratelimit.LeakyBucket}},
		{"10/s fixed-window burst 20", ratelimit.Limit{Rate: 10, Burst: 20, Algorithm: ratelimit.FixedWindow}},
		{"1/h sliding-counter", ratelimit.Limit{Rate: 1.0 / 3600, Burst: 1, Algorithm: ratelimit.SlidingWindowCounter}},
		{"10/s warm-up 30s token-bucket", ratelimit.Limit{Rate: 10, Burst: 10, Warmup: 30 * time.Second, Algorithm: ratelimit.TokenBucket}},
		{"100/min keep-usage", ratelimit.Limit{Rate: 100.0 / 60, Burst: 100, KeepUsage: true}},
		{"10/s burst 20 leaky-bucket keep-usage", ratelimit.Limit{Rate: 10, Burst: 20, Algorithm: ratelimit.LeakyBucket, KeepUsage: true}},
	}
	for _, c := range cases {
		got, err := ratelimit.ParseLimit(c.text)
		require.NoError(t, err, c.text)
		assert.Equal(t, c.want, got, c.text)
	}
	bad := map[string]string{
		"":                                      "ratelimit: invalid limit: empty text",
		"100":                                   `ratelimit: invalid limit: "100": "100" is not a count per unit, such as 100/min`,
		"x/s":                                   `ratelimit: invalid limit: "x/s": count "x" is not a number greater than zero`,
		"0/s":                                   `ratelimit: invalid limit: "0/s": count "0" is not a number greater than zero`,
		"10/week":                               `ratelimit: invalid limit: "10/week": "week" is a calendar period: a quota names its time zone, as in 10/week@UTC`,
		"10/month":                              `ratelimit: invalid limit: "10/month": "month" is a calendar period: a quota names its time zone, as in 10/month@UTC`,
		"10/2week burst 3":                      `ratelimit: invalid limit: "10/2week burst 3": "2week" is a calendar period: a quota names its time zone, as in 10/2week@UTC`,
		"10/fortnight":                          `ratelimit: invalid limit: "10/fortnight": unknown unit "fortnight" (s, min, h or day; a calendar quota: day, week or month@zone)`,
		"100/min sliding-lgo":                   `ratelimit: invalid limit: "100/min sliding-lgo": unknown algorithm "sliding-lgo" (token-bucket, fixed-window, sliding-log, sliding-counter, leaky-bucket)`,
		"100/min burst 5 slidinglog keep-usage": `ratelimit: invalid limit: "100/min burst 5 slidinglog keep-usage": unknown algorithm "slidinglog" (token-bucket, fixed-window, sliding-log, sliding-counter, leaky-bucket)`,
		"10/s burst":                            `ratelimit: invalid limit: "10/s burst": "burst" has no value`,
		"10/s burst two":                        `ratelimit: invalid limit: "10/s burst two": burst "two" is not a whole number`,
		"10/s burst 0":                          `ratelimit: invalid limit: burst 0 is less than 1 (in "10/s burst 0")`,
		"10/s warm-up soon":                     `ratelimit: invalid limit: "10/s warm-up soon": warm-up "soon" is not a duration such as 30s`,
		"10/s cap 3":                            `ratelimit: invalid limit: "10/s cap 3": unknown part "cap" (burst, warm-up, an algorithm: token-bucket, fixed-window, sliding-log, sliding-counter, leaky-bucket, or a last keep-usage)`,
		"10/s keep-usage burst 3":               `ratelimit: invalid limit: "10/s keep-usage burst 3": unknown part "keep-usage" (burst, warm-up, an algorithm: token-bucket, fixed-window, sliding-log, sliding-counter, leaky-bucket, or a last keep-usage)`,
		"10/s sliding-log leaky-bucket":         `ratelimit: invalid limit: "10/s sliding-log leaky-bucket": a second algorithm "leaky-bucket"`,
		"10/s burst sliding-log":                `ratelimit: invalid limit: "10/s burst sliding-log": burst "sliding-log" is not a whole number`,
		"10/s warm-up 1ns":                      `ratelimit: invalid limit: warm-up 1ns is not a whole number of microseconds between 0 and 2^53 µs (in "10/s warm-up 1ns")`,
	}
	for text, want := range bad {
		_, err := ratelimit.ParseLimit(text)
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, text)
		assert.EqualError(t, err, want)
	}
}

// A Limit is a flag, a JSON string and an environment variable through its text; the zero
// Limit is the empty text.
func TestLimitText(t *testing.T) {
	var l ratelimit.Limit
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.TextVar(&l, "login", ratelimit.PerMinute(5), "login limit")
	require.NoError(t, fs.Parse([]string{"-login", "10/s burst 20"}))
	assert.Equal(t, ratelimit.Limit{Rate: 10, Burst: 20}, l)

	b, err := json.Marshal(struct{ Login ratelimit.Limit }{ratelimit.PerMinute(100)})
	require.NoError(t, err)
	assert.Equal(t, `{"Login":"100/min"}`, string(b))
	var cfg struct{ Login, API ratelimit.Limit }
	require.NoError(t, json.Unmarshal([]byte(`{"Login":"5/min","API":""}`), &cfg))
	assert.Equal(t, ratelimit.PerMinute(5), cfg.Login)
	assert.Zero(t, cfg.API)
	_, err = ratelimit.Limit{Rate: math.NaN(), Burst: 1}.MarshalText()
	assert.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
}

// FuzzLimitText: every valid Limit reads back from its text exactly.
func FuzzLimitText(f *testing.F) {
	f.Add(10.0, 10, int64(0), uint8(0), uint8(0), 0, 0)
	f.Add(100.0/60, 100, int64(0), uint8(0), uint8(0), 0, 0)
	f.Add(1.0/86400, 1, int64(30e6), uint8(0), uint8(0), 0, 0)
	f.Add(math.Pi, 3, int64(1), uint8(0), uint8(0), 0, 0)
	f.Add(100.0/60, 100, int64(0), uint8(ratelimit.SlidingWindowLog), uint8(0), 0, 0)
	f.Add(10.0, 20, int64(0), uint8(ratelimit.LeakyBucket), uint8(0), 0, 0)
	f.Add(10.0, 10, int64(5e6), uint8(ratelimit.TokenBucket), uint8(0), 0, 0)
	f.Add(100.0/60, 100, int64(0), uint8(ratelimit.FixedWindow|0x80), uint8(0), 0, 0)
	f.Add(2.0, 7, int64(0), uint8(0x80), uint8(0), 0, 0)
	// Calendar quotas: unit, count and anchor, in one of fuzzZones.
	f.Add(0.0, 10000, int64(0), uint8(ratelimit.CalendarQuota), uint8(ratelimit.Day), 0, 0)
	f.Add(0.0, 7, int64(0), uint8(ratelimit.CalendarQuota), uint8(ratelimit.Week), 2, 0)
	f.Add(0.0, 1_000_000, int64(0), uint8(ratelimit.CalendarQuota), uint8(ratelimit.Month), 3, 15)
	f.Add(0.0, 500, int64(0), uint8(ratelimit.CalendarQuota|0x80), uint8(ratelimit.Day), 0, 0)
	f.Fuzz(func(t *testing.T, rate float64, burst int, warmupUS int64, alg, unit uint8, count, anchor int) {
		// alg's high bit is KeepUsage.
		l := ratelimit.Limit{Rate: rate, Burst: burst, Warmup: time.Duration(warmupUS) * time.Microsecond,
			Algorithm: ratelimit.Algorithm(alg & 0x7f), KeepUsage: alg&0x80 != 0}
		if unit != 0 {
			l.Period = ratelimit.Period{Unit: ratelimit.PeriodUnit(unit % 4), Count: count, Anchor: anchor,
				Zone: fuzzZones[int(unit)%len(fuzzZones)]}
		}
		if l.Validate() != nil {
			return
		}
		got, err := ratelimit.ParseLimit(l.String())
		require.NoError(t, err, l.String())
		if l.Period.Count == 1 {
			l.Period.Count = 0 // one bucket, written alike (see Period)
		}
		if l.Period.Anchor == 1 {
			l.Period.Anchor = 0
		}
		require.Equal(t, l, got, l.String())
	})
}

var fuzzZones = []string{"Europe/Paris", "UTC", "America/New_York", "Asia/Kolkata", "America/Santiago"}

// The zero Limit, which middleware reads as no limit, is a Limit with no field set: one
// field is enough to make it a limit (an invalid one, for a field alone).
func TestZeroLimit(t *testing.T) {
	assert.Zero(t, ratelimit.Limit{})
	assert.NotZero(t, ratelimit.Limit{Burst: 1})
	assert.NotZero(t, ratelimit.PerSecond(1))
	assert.NotZero(t, ratelimit.Limit{Warmup: time.Second})
	assert.NotZero(t, ratelimit.Limit{Algorithm: ratelimit.SlidingWindowLog}, "an algorithm alone is an invalid limit, not no limit")
}

func TestSentinelsAreDistinct(t *testing.T) {
	all := []error{ratelimit.ErrInvalidArgument,
		ratelimit.ErrExceedsBurst, ratelimit.ErrNotSupported, ratelimit.ErrClosed}
	for i, a := range all {
		for j, b := range all {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

func TestNames(t *testing.T) {
	assert.Equal(t, "TokenBucket", ratelimit.TokenBucket.String())
	assert.Equal(t, "FixedWindow", ratelimit.FixedWindow.String())
	assert.Equal(t, "SlidingWindowLog", ratelimit.SlidingWindowLog.String())
	assert.Equal(t, "SlidingWindowCounter", ratelimit.SlidingWindowCounter.String())
	assert.Equal(t, "LeakyBucket", ratelimit.LeakyBucket.String())
	assert.Equal(t, "Algorithm(9)", ratelimit.Algorithm(9).String())
	assert.Equal(t, "DefaultAlgorithm", ratelimit.DefaultAlgorithm.String())
	assert.Equal(t, ratelimit.DefaultAlgorithm, ratelimit.Algorithm(0), "the zero value is the default")
}

// Unlimited is no limit a limiter decides, is not the zero Limit, and is written as what
// it is.
func TestUnlimitedValue(t *testing.T) {
	assert.NotZero(t, ratelimit.Unlimited)
	assert.ErrorIs(t, ratelimit.Unlimited.Validate(), ratelimit.ErrInvalidArgument)
	assert.Equal(t, "unlimited", ratelimit.Unlimited.String())
	_, err := ratelimit.Unlimited.MarshalText()
	assert.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
}
