package ratelimittest

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/priority"
)

// tick is one request of a timeline: move the clock forward by Advance, then ask for N tokens
// at Priority (the harness's limiter has the default reserves).
type tick struct {
	Advance  time.Duration
	N        int
	Priority priority.Level
}

// randomOps returns count Ops drawn from seed: advances of 0 to maxAdvance in whole
// microseconds, costs of 1 to maxN.
func randomOps(seed uint64, count int, maxAdvance time.Duration, maxN int) []tick {
	rng := rand.New(rand.NewPCG(seed, 0))
	ops := make([]tick, count)
	for i := range ops {
		ops[i] = tick{
			Advance: time.Duration(rng.Int64N(maxAdvance.Microseconds()+1)) * time.Microsecond,
			N:       1 + rng.IntN(maxN),
		}
	}
	return ops
}

// timeline plays Ops on one bucket of a harness, keeping the time in microseconds since the
// first request's clock reading.
type timeline struct {
	t     testing.TB
	h     harness
	limit ratelimit.Limit
	u     int64
}

// ask moves the clock by d, asks for n tokens at p and returns the Result, with its Limit
// checked.
func (tl *timeline) ask(d time.Duration, n int, p priority.Level) ratelimit.Result {
	tl.t.Helper()
	tl.h.Advance(d)
	tl.u += d.Microseconds()
	res, err := tl.h.Limiter.AllowN(priority.With(context.Background(), p), "model", tl.limit, n)
	require.NoError(tl.t, err)
	require.Equal(tl.t, tl.limit, res.Limit)
	return res
}

// usable is the part of limit's Burst a request of priority p may take, with the default
// reserves.
func usable(limit ratelimit.Limit, p priority.Level) int {
	return limit.Burst - priority.Reserves{}.Tokens(p, limit.Burst)
}

// checkSlidingLog plays ops (whole microseconds, 1 ≤ N ≤ Burst) on a SlidingWindowLog
// harness and checks every Result exactly against the reference model: a plain list of
// the times of the admitted tokens. After each denial it also checks that RetryAfter is
// exact: the same request is denied 1 µs before it and allowed at it. At the end it checks
// the guarantee itself: no interval of length W ever saw more than Burst tokens admitted.
// An op of a priority below Critical is decided as under a Burst less its reserve.
func checkSlidingLog(t testing.TB, h harness, limit ratelimit.Limit, ops []tick) {
	t.Helper()
	w, err := args.LogWindow(limit)
	require.NoError(t, err)
	tl := &timeline{t: t, h: h, limit: limit}
	var admitted []int64 // one entry per admitted token, in order
	first := 0           // admitted[first:] are later than u − W: the window
	step := func(d time.Duration, n int, p priority.Level) ratelimit.Result {
		res := tl.ask(d, n, p)
		for first < len(admitted) && admitted[first] <= tl.u-w {
			first++
		}
		window := admitted[first:] // oldest first
		us := func(v int64) time.Duration { return time.Duration(v) * time.Microsecond }
		count, top := len(window), usable(limit, p)
		want := ratelimit.Result{Limit: limit, Allowed: count+n <= top}
		if want.Allowed {
			for range n {
				admitted = append(admitted, tl.u)
			}
			want.Remaining = top - count - n
			want.ResetAfter = us(w) // the newest entry is this one
		} else {
			k := count + n - top // 1 ≤ k ≤ count, since n ≤ top
			want.Remaining = max(top-count, 0)
			want.RetryAfter = us(window[k-1] + w - tl.u)
			want.ResetAfter = us(window[count-1] + w - tl.u)
		}
		require.Equal(t, want, uncharged(t, res), "at %d µs, n = %d, %v", tl.u, n, p)
		return res
	}
	for _, op := range ops {
		res := step(op.Advance, op.N, op.Priority)
		if res.Allowed {
			continue
		}
		again := step(res.RetryAfter-time.Microsecond, op.N, op.Priority)
		require.False(t, again.Allowed, "allowed 1 µs before RetryAfter %v", res.RetryAfter)
		require.True(t, step(time.Microsecond, op.N, op.Priority).Allowed, "denied at RetryAfter %v", res.RetryAfter)
	}
	// The interval (a − W, a] holding the most tokens ends at an admission a.
	first = 0
	for last, a := range admitted {
		for admitted[first] <= a-w {
			first++
		}
		require.LessOrEqual(t, last-first+1, limit.Burst, "more than Burst tokens in the window ending at %d µs", a)
	}
}

// checkLeakyBucket plays ops (whole microseconds, 1 ≤ N ≤ Burst) on a LeakyBucket harness
// against the reference model of a shaper: a queue drained at exactly Rate, computed in
// floating-point microseconds of its own, with T = 1/Rate and τ = Burst·T. Each request's
// first token starts at S = max(queue end, u) and it is allowed when S + N·T − u ≤ τ; it
// then waits Delay = S − u, and the queue ends at S + N·T.
//
// The backends count time in tokens since 2020 and hand out whole microseconds: Delay and
// ResetAfter are rounded to the nearest, RetryAfter is the first microsecond at which the
// backend's own arithmetic admits the request, and the token clock's rounding adds noise
// well under 0.1 µs at every supported rate. The checks allow exactly that, and a decision
// within the noise of the line may go either way. Beyond the model they check the
// guarantees: departures (u + Delay) never closer than N·T to the one before, but for the
// two roundings; never more than Burst tokens queued; and RetryAfter exact for the backend
// (denied 1 µs before it, allowed at it). An op of a priority below Critical is decided as
// in a queue of Burst less its reserve, τ' = (Burst − R)·T; the queue it joins is the real
// one.
func checkLeakyBucket(t testing.TB, h harness, limit ratelimit.Limit, ops []tick) {
	t.Helper()
	tl := &timeline{t: t, h: h, limit: limit}
	period := 1e6 / limit.Rate // T in µs
	tau := float64(limit.Burst) * period
	const noise = 0.1   // µs
	end := math.Inf(-1) // when the queue is empty, in the model's microseconds
	lastDeparture, lastN := math.Inf(-1), 0
	us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	rounded := func(got time.Duration, want float64, what string) {
		t.Helper()
		require.InDelta(t, want, us(got), 0.5+noise, "%s at %d µs", what, tl.u)
	}
	step := func(d time.Duration, n int, p priority.Level) ratelimit.Result {
		t.Helper()
		res := tl.ask(d, n, p)
		u := float64(tl.u)
		start := max(end, u)
		fill := float64(usable(limit, p)) * period     // τ' = (Burst − R)·T
		margin := start + float64(n)*period - u - fill // how long until the request fits
		if math.Abs(margin) > noise {
			require.Equal(t, margin <= 0, res.Allowed, "at %d µs, n = %d: margin %v µs", tl.u, n, margin)
		}
		if !res.Allowed {
			require.Zero(t, res.Delay)
			retry := us(res.RetryAfter)
			require.True(t, retry >= margin-noise && retry <= max(margin, 0)+1+noise,
				"RetryAfter %v µs at %d µs, model %v µs", retry, tl.u, margin)
			rounded(res.ResetAfter, start-u, "ResetAfter")
			return res
		}
		require.Zero(t, res.RetryAfter)
		rounded(res.Delay, start-u, "Delay")
		end = start + float64(n)*period
		rounded(res.ResetAfter, end-u, "ResetAfter")
		room := (fill - (end - u)) / period
		require.True(t, res.Remaining >= int(math.Floor(room-noise/period)) && res.Remaining <= int(math.Floor(room+noise/period)),
			"Remaining %d, want ⌊%v⌋ at %d µs", res.Remaining, room, tl.u)

		departure := u + us(res.Delay)
		require.GreaterOrEqual(t, departure-lastDeparture, float64(lastN)*period-1-noise,
			"departure at %v µs too close to the one before, at %v µs", departure, lastDeparture)
		require.LessOrEqual(t, departure+float64(n)*period-u, tau+0.5+noise, "more than Burst queued at %d µs", tl.u)
		lastDeparture, lastN = departure, n
		return res
	}
	for _, op := range ops {
		res := step(op.Advance, op.N, op.Priority)
		if res.Allowed {
			continue
		}
		require.False(t, step(res.RetryAfter-time.Microsecond, op.N, op.Priority).Allowed,
			"allowed 1 µs before RetryAfter %v", res.RetryAfter)
		require.True(t, step(time.Microsecond, op.N, op.Priority).Allowed, "denied at RetryAfter %v", res.RetryAfter)
	}
}
