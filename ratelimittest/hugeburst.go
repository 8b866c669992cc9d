package ratelimittest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// hugeBurst: the largest Burst, args.MaxBurst = 2^52, decides exactly on every
// algorithm and every backend: a drained bucket denies, and a token comes back exactly when
// it should. At that Burst every count and every clock reading in tokens is an integer near
// 2^52, where a float64 (a Redis script's only number) still holds each one exactly, and
// where any comparison that rounded would admit what it should deny.
//
// W = Burst/Rate must fit in 2^53 µs, so Rate is at least 2^52·10⁶/2^53 = 500,000/s: at
// 10⁶/s (T = 1 µs) W is 2^52 µs, about 143 years; at 500,000/s (T = 2 µs) it is 2^53 µs.
// Just below that rate the limit is refused, by every algorithm, and the sliding log
// refuses any Burst above args.MaxLogBurst.
func hugeBurst(t testing.TB, h harness) {
	const huge = args.MaxBurst
	fast := ratelimit.Limit{Rate: 1e6, Burst: huge} // T = 1 µs, W = 2^52 µs
	slow := ratelimit.Limit{Rate: 5e5, Burst: huge} // T = 2 µs, W = 2^53 µs
	tooSlow := ratelimit.Limit{Rate: 499_999, Burst: huge}
	for _, limit := range []ratelimit.Limit{tooSlow, fast, slow} {
		if limit != tooSlow && h.Algorithm != ratelimit.SlidingWindowLog {
			continue
		}
		res, err := h.Limiter.AllowN(context.Background(), "huge", limit, 1)
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "%v", limit)
		require.Equal(t, ratelimit.Result{Limit: limit}, res)
	}

	const us = time.Microsecond
	// x0: the clock's first reading in Unix µs, 1,767,225,600·10⁶, less than 2^52: the
	// window algorithms start in window 0 of W = 2^52 µs, left0 before its end.
	x0 := NewClock().Now().UnixMicro()
	w := time.Duration(huge) * us
	left0 := w - time.Duration(x0)*us
	switch h.Algorithm {
	case ratelimit.TokenBucket, ratelimit.LeakyBucket:
		// A full bucket of 2^52 taken at once: 2^52 tokens to refill, τ = Burst·T. One
		// more token is T away; all of them, τ. A request of the queue (LeakyBucket) waits
		// until the queue before it has left: its Delay.
		delayed := func(resetAfter, delay time.Duration) ratelimit.Result {
			if h.Algorithm == ratelimit.TokenBucket {
				delay = 0
			}
			return queued(0, resetAfter, delay)
		}
		play(t, h, "fast", fast, []step{
			{n: huge, want: allowed(0, w)},
			{want: denied(0, us, w)},
			{n: huge, want: denied(0, w, w)},
			{advance: us, want: delayed(w, w-us)},
			{want: denied(0, us, w)},
		})
		// One µs on, to an even µs since 2020: whole tokens at 500,000/s.
		play(t, h, "slow", slow, []step{
			{advance: us, n: huge, want: allowed(0, 2*w)},
			{want: denied(0, 2*us, 2*w)},
			{advance: 2 * us, want: delayed(2*w, 2*w-2*us)},
			{n: 2, want: denied(0, 4*us, 2*w)},
			{advance: 4 * us, n: 2, want: delayed(2*w, 2*w-4*us)},
		})
	case ratelimit.FixedWindow:
		play(t, h, "fast", fast, []step{
			{n: huge, want: allowed(0, left0)},
			{want: denied(0, left0, left0)},
			{n: huge, want: denied(0, left0, left0)},
			// Unix 2^52 µs, in 2112: window 1 gives out all of it again.
			{advance: left0, n: huge, want: allowed(0, w)},
			{want: denied(0, w, w)},
		})
		// W = 2^53 µs: the clock, now at 2^52 µs, is in window 0, which ends 2^52 µs on.
		play(t, h, "slow", slow, []step{
			{n: huge, want: allowed(0, w)},
			{want: denied(0, w, w)},
		})
	case ratelimit.SlidingWindowCounter:
		// The clock stays below 2^53 µs since 1970 (2255), where the Redis script's clock
		// is exact: with W = 2^52 µs, windows 0 and 1. Bucket "fast" is drained, bucket
		// "odd" left one token short, so that its estimate has a fraction later on.
		reset0 := 2*w - time.Duration(x0)*us // est weighs until window 2 starts
		play(t, h, "fast", fast, []step{
			{n: huge, want: allowed(0, reset0)},
			// Window 0 is full, so the request waits for window 1, where
			// 2^52·(W − y)/W + 1 ≤ 2^52 at y = 1 µs.
			{want: denied(0, left0+us, reset0)},
		})
		play(t, h, "odd", fast, []step{{n: huge - 1, want: allowed(1, reset0)}})
		// Halfway into window 1 the previous window weighs half: est = 2^51, and 2^51 more
		// fit exactly. est is then 2^52, and falls by 1 every µs:
		// 2^52·(2^51 − 1)/2^52 + 2^51 + 1 ≤ 2^52.
		play(t, h, "fast", fast, []step{
			{advance: left0 + w/2, n: huge / 2, want: allowed(0, w+w/2)},
			{want: denied(0, us, w+w/2)},
		})
		// Bucket "odd": est = (2^52 − 1)/2 + 2^51 = 2^52 − ½ after its 2^51. One more is
		// denied, with half a token to go, though a float64 sum est + 1 would round to
		// 2^52 and admit it. A µs later est = 2^52 − 1.
		play(t, h, "odd", fast, []step{
			{n: huge / 2, want: allowed(0, w+w/2)},
			{want: denied(0, us, w+w/2)},
		})
		play(t, h, "fast", fast, []step{
			{advance: us, want: allowed(0, w+w/2-us)},
			{want: denied(0, us, w+w/2-us)},
		})
		play(t, h, "odd", fast, []step{{want: allowed(0, w+w/2-us)}})
		// W = 2^53 µs: the clock, at 3·2^51 + 1 µs, is in window 0, and est weighs for
		// longer than a Result says (capped at 2^53 µs). A drained bucket admits again 2 µs
		// into window 1: 2^52·(2^53 − 2)/2^53 + 1 = 2^52. At 1 µs est + 1 is 2^52 + ½.
		x := time.Duration(x0)*us + left0 + w/2 + us
		play(t, h, "slow", slow, []step{
			{n: huge, want: allowed(0, 2*w)},
			{want: denied(0, 2*w-x+2*us, 2*w)},
		})
	}
}
