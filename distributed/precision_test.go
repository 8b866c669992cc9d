package distributed_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

const us = time.Microsecond

// step is one moment of a timeline on one bucket: move the clock, ask for n tokens (1 if
// n is 0), expect a result.
type step struct {
	advance time.Duration
	n       int
	want    ratelimit.Result
}

func play(t *testing.T, l ratelimit.Limiter, clock *ratelimittest.Clock, limit ratelimit.Limit, steps []step) {
	t.Helper()
	for i, s := range steps {
		clock.Advance(s.advance)
		got, err := l.AllowN(context.Background(), "k", limit, max(s.n, 1))
		require.NoError(t, err, "step %d", i)
		s.want.Limit = limit
		if s.want.Allowed {
			s.want.Charge.At = clock.Now() // the test clock, to the microsecond
		}
		require.Equal(t, s.want, got, "step %d", i)
	}
}

func allowed(remaining int, reset time.Duration) ratelimit.Result {
	return ratelimit.Result{Allowed: true, Remaining: remaining, ResetAfter: reset}
}

func denied(remaining int, retry, reset time.Duration) ratelimit.Result {
	return ratelimit.Result{Remaining: remaining, RetryAfter: retry, ResetAfter: reset}
}

// TestPrecision decides at the ends of the supported range exactly, to the microsecond.
func TestPrecision(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	day := 24 * time.Hour
	cases := []struct {
		name  string
		limit ratelimit.Limit
		steps []step
	}{{
		// T = 1 µs: a billion tokens drain in one call and come back in 1000 s.
		name:  "MaxRateHugeBurst",
		limit: ratelimit.Limit{Rate: 1e6, Burst: 1e9},
		steps: []step{
			{n: 1e9, want: allowed(0, 1000*time.Second)},
			{want: denied(0, us, 1000*time.Second)},
			{advance: us, want: allowed(0, 1000*time.Second)},
			{n: 2, want: denied(0, 2*us, 1000*time.Second)},
		},
	}, {
		name:  "OnePerDay",
		limit: ratelimit.Limit{Rate: 1.0 / 86400, Burst: 1},
		steps: []step{
			{want: allowed(0, day)},
			{want: denied(0, day, day)},
			{advance: day - us, want: denied(0, us, us)},
			{advance: us, want: allowed(0, day)},
		},
	}, {
		// The longest refill there is: 104,249 days, 2^53 µs less 85,655 s. A day more is
		// refused (TestLimitsCheckedBeforeRedis).
		name:  "OnePerDayLongestRefill",
		limit: ratelimit.Limit{Rate: 1.0 / 86400, Burst: 104249},
		steps: []step{
			{n: 104249, want: allowed(0, 104249*day)},
			{want: denied(0, day, 104249*day)},
			{advance: day, want: allowed(0, 104249*day)},
		},
	}, {
		// T = 1/3 s is no whole number of microseconds. The TAT moves by exactly one token
		// per request, so the third request fits on the line, and RetryAfter is the first
		// whole microsecond at which a token is back (⌈333,333.3⌉).
		name:  "FractionalInterval",
		limit: ratelimit.Limit{Rate: 3, Burst: 3},
		steps: []step{
			{want: allowed(2, 333333*us)},
			{want: allowed(1, 666667*us)},
			{want: allowed(0, time.Second)},
			{want: denied(0, 333334*us, time.Second)},
			// 333,333 µs bring back 0.999999 tokens: 0.000001 (a third of a µs) missing.
			{advance: 333333 * us, want: denied(0, us, 666667*us)},
			{advance: us, want: allowed(0, 999999*us)},
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := ratelimittest.NewClock()
			play(t, newLimiter(t, client, clock), clock, c.limit, c.steps)
		})
	}
}

// TestFractionalIntervalDoesNotDrift takes a bucket of 300,000/s (T = 3.33 µs) one token at
// a time. A TAT rounded to whole microseconds would move 3 µs per request and admit 1,111
// requests out of a burst of 1,000.
func TestFractionalIntervalDoesNotDrift(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock()
	l := newLimiter(t, newClient(t, server.Addr()), clock)
	limit := ratelimit.Limit{Rate: 300000, Burst: 1000}
	ctx := context.Background()
	for i := range 1000 {
		res, err := l.Allow(ctx, "k", limit)
		require.NoError(t, err)
		require.True(t, res.Allowed, "request %d", i)
		require.Equal(t, 1000-1-i, res.Remaining, "request %d", i)
	}
	steps := []step{
		// One token is 3.33 µs away: the first whole microsecond after it is the 4th.
		{want: denied(0, 4*us, 3333*us)},
		// A millisecond brings back exactly 300 tokens.
		{advance: time.Millisecond, n: 300, want: allowed(0, 3333*us)},
		{want: denied(0, 4*us, 3333*us)},
	}
	play(t, l, clock, limit, steps)
}

// TestFarFuture: at the maximum rate the token clock stays exact for centuries; 2100 is
// well inside.
func TestFarFuture(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock()
	clock.Advance(74 * 365 * 24 * time.Hour)
	l := newLimiter(t, newClient(t, server.Addr()), clock)
	play(t, l, clock, ratelimit.Limit{Rate: 1e6, Burst: 10}, []step{
		{n: 10, want: allowed(0, 10*us)},
		{want: denied(0, us, 10*us)},
		{advance: 3 * us, n: 3, want: allowed(0, 10*us)},
	})
}

func TestMaxRate(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock()
	l := newLimiter(t, newClient(t, server.Addr()), clock)
	ctx := context.Background()
	_, err := l.Allow(ctx, "k", ratelimit.Limit{Rate: 1e6, Burst: 1})
	require.NoError(t, err)
	for _, rate := range []float64{math.Nextafter(1e6, math.Inf(1)), 2e6, math.MaxFloat64} {
		res, err := l.Allow(ctx, "k", ratelimit.Limit{Rate: rate, Burst: 1})
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "rate %v", rate)
		require.False(t, res.Allowed)
	}
}
