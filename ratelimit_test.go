package ratelimit_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

func TestConstructors(t *testing.T) {
	assert.Equal(t, ratelimit.Limit{Rate: 10, Burst: 10}, ratelimit.PerSecond(10))
	assert.Equal(t, ratelimit.Limit{Rate: 2.0 / 60, Burst: 2}, ratelimit.PerMinute(2))
	assert.Equal(t, ratelimit.Limit{Rate: 100.0 / 3600, Burst: 100}, ratelimit.PerHour(100))
}

func TestValidate(t *testing.T) {
	valid := []ratelimit.Limit{
		ratelimit.PerSecond(1), ratelimit.PerHour(1), {Rate: 1e-9, Burst: 1}, {Rate: 1e6, Burst: 1e9},
		{Rate: 1, Burst: 1, Warmup: time.Microsecond}, {Rate: 1, Burst: 1, Warmup: ratelimit.MaxWarmup},
	}
	for _, l := range valid {
		assert.NoError(t, l.Validate(), l)
	}
	invalid := []ratelimit.Limit{
		{}, ratelimit.PerSecond(0), ratelimit.PerMinute(-1),
		{Rate: math.NaN(), Burst: 1}, {Rate: math.Inf(1), Burst: 1}, {Rate: math.Inf(-1), Burst: 1},
		{Rate: -1, Burst: 1}, {Rate: 1, Burst: 0}, {Rate: 1, Burst: -5},
		{Rate: 1, Burst: ratelimit.MaxBurst + 1},
		{Rate: 1, Burst: 1, Warmup: -time.Microsecond}, {Rate: 1, Burst: 1, Warmup: 1500 * time.Nanosecond},
		{Rate: 1, Burst: 1, Warmup: ratelimit.MaxWarmup + time.Microsecond},
	}
	for _, l := range invalid {
		err := l.Validate()
		require.ErrorIs(t, err, ratelimit.ErrInvalidLimit, l)
	}
	assert.EqualError(t, ratelimit.Limit{Rate: 1}.Validate(), "ratelimit: invalid limit: burst 0 is less than 1")
	assert.EqualError(t, ratelimit.Limit{Rate: 1, Burst: 1 << 53}.Validate(),
		"ratelimit: invalid limit: burst 9007199254740992 is more than MaxBurst (2^52)")
	require.NoError(t, ratelimit.Limit{Rate: 1, Burst: ratelimit.MaxBurst}.Validate())
	assert.EqualError(t, ratelimit.Limit{Rate: -2, Burst: 1}.Validate(),
		"ratelimit: invalid limit: rate -2 is not a finite number greater than zero")
	assert.EqualError(t, ratelimit.Limit{Rate: 1, Burst: 1, Warmup: time.Nanosecond}.Validate(),
		"ratelimit: invalid limit: warm-up 1ns is not a whole number of microseconds between 0 and MaxWarmup (2^53 µs)")
	assert.Equal(t, time.Duration(1<<53)*time.Microsecond, ratelimit.MaxWarmup)
}

func TestLimitString(t *testing.T) {
	cases := []struct {
		limit ratelimit.Limit
		want  string
	}{
		{ratelimit.PerSecond(10), "10/s burst 10"},
		{ratelimit.PerMinute(2), "2/min burst 2"},
		{ratelimit.PerMinute(100), "100/min burst 100"},
		{ratelimit.PerHour(30), "30/h burst 30"},
		{ratelimit.Limit{Rate: 1, Burst: 2}, "1/s burst 2"},
		{ratelimit.Limit{Rate: 1.5, Burst: 3}, "90/min burst 3"},
		{ratelimit.Limit{Rate: 0.7, Burst: 3}, "42/min burst 3"},
		{ratelimit.Limit{Rate: 2.5e-4, Burst: 3}, "0.9/h burst 3"},
		{ratelimit.Limit{Rate: 1.0 / 86400, Burst: 1}, "0.0416667/h burst 1"},
		{ratelimit.Limit{Rate: 0.123456789, Burst: 3}, "7.40741/min burst 3"},
		{ratelimit.Limit{Rate: math.Pi, Burst: 3}, "3.14159/s burst 3"},
		{ratelimit.Limit{}, "0/s burst 0"},
		{ratelimit.Limit{Rate: -2, Burst: 1}, "-2/s burst 1"},
		{ratelimit.Limit{Rate: math.Inf(1), Burst: 1}, "+Inf/s burst 1"},
		{ratelimit.Limit{Rate: math.NaN(), Burst: 1}, "NaN/s burst 1"},
		{ratelimit.Limit{Rate: 10, Burst: 10, Warmup: 30 * time.Second}, "10/s burst 10 warm-up 30s"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.limit.String())
	}
}

func TestIsZero(t *testing.T) {
	assert.True(t, ratelimit.Limit{}.IsZero())
	assert.False(t, ratelimit.Limit{Burst: 1}.IsZero())
	assert.False(t, ratelimit.PerSecond(1).IsZero())
	assert.False(t, ratelimit.Limit{Warmup: time.Second}.IsZero())
}

func TestSentinelsAreDistinct(t *testing.T) {
	all := []error{ratelimit.ErrKeyEmpty, ratelimit.ErrInvalidLimit, ratelimit.ErrInvalidCost,
		ratelimit.ErrExceedsBurst, ratelimit.ErrNotSupported, ratelimit.ErrClosed}
	for i, a := range all {
		for j, b := range all {
			assert.Equal(t, i == j, errors.Is(a, b), "%v vs %v", a, b)
		}
	}
}

func TestNames(t *testing.T) {
	assert.Equal(t, "FailOpen", ratelimit.FailOpen.String())
	assert.Equal(t, "FailClosed", ratelimit.FailClosed.String())
	assert.Equal(t, "ErrorPolicy(7)", ratelimit.ErrorPolicy(7).String())
	assert.Equal(t, ratelimit.FailOpen, ratelimit.ErrorPolicy(0), "the zero value is the default")
	assert.Equal(t, "TokenBucket", ratelimit.TokenBucket.String())
	assert.Equal(t, "FixedWindow", ratelimit.FixedWindow.String())
	assert.Equal(t, "SlidingWindowLog", ratelimit.SlidingWindowLog.String())
	assert.Equal(t, "SlidingWindowCounter", ratelimit.SlidingWindowCounter.String())
	assert.Equal(t, "LeakyBucket", ratelimit.LeakyBucket.String())
	assert.Equal(t, "Algorithm(9)", ratelimit.Algorithm(9).String())
	assert.Equal(t, ratelimit.TokenBucket, ratelimit.Algorithm(0), "the zero value is the default")
}
