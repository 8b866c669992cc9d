package ratelimittest

import (
	"testing"
	"time"

	"github.com/sluice-go/ratelimit"
)

// slidingCounterRules are the rules of ratelimit.SlidingWindowCounter: fixed windows of W =
// Burst/Rate aligned to the Unix epoch, and at x into a window the estimate est = prev·(W − x)/W +
// cur of what the sliding window (now − W, now] holds, prev and cur being the counts of the
// previous and the current fixed window. A request for n is allowed when est + n ≤ Burst. Remaining
// = ⌊Burst − est⌋ after the decision; RetryAfter is the first whole microsecond at which est has
// fallen enough; ResetAfter runs to the end of the window after the last one that counted anything,
// when est reaches 0.
//
// The timelines start at 2026-01-01T00:00:00Z, a multiple of every W below.
var slidingCounterRules = []rule{
	{"WeightedEstimate", swcWeightedEstimate},
	{"BoundaryBurstIsSmoothed", swcBoundaryBurst},
	{"DenialTakesNothing", swcDenialTakesNothing},
	{"AllowNIsAllOrNothing", swcAllowNIsAllOrNothing},
	{"BucketIdentity", swcBucketIdentity},
	{"AgainstModel", checkModelRule},
}

// swcWeightedEstimate: Burst 10, W = 10 s. Eight requests in one window; 2.5 s into the
// next, 75 % of the sliding window lies in the previous one, so est = 8 × 0.75 = 6 and
// exactly four more pass.
func swcWeightedEstimate(t testing.TB, h harness) {
	var steps []step
	// At 1 s, window 0: prev 0, so est = cur. ResetAfter: est is 0 from the end of window
	// 1, at 20 s, 19 s away.
	for i := range 8 {
		s := step{want: allowed(9-i, 19*time.Second)}
		if i == 0 {
			s.advance = time.Second
		}
		steps = append(steps, s)
	}
	// At 12.5 s, x = 2.5 s into window 1: est = 8 × 7.5/10 + cur = 6 + cur. The four
	// allowed leave est 7, 8, 9, 10; ResetAfter 20 − 2.5 s, to the end of window 2.
	for i := range 4 {
		s := step{want: allowed(3-i, 17500*ms)}
		if i == 0 {
			s.advance = 11500 * ms
		}
		steps = append(steps, s)
	}
	steps = append(steps,
		// The fifth: est + 1 = 11 > 10. It fits once 8·(10 − y)/10 + 4 + 1 ≤ 10, at
		// y = 3.75 s: 1.25 s from now.
		step{want: denied(0, 1250*ms, 17500*ms)},
		// At y = 3.749 s est = 8 × 0.6251 + 4 = 9.0008: still denied, 1 ms to go.
		step{advance: 1249 * ms, want: denied(0, ms, 16251*ms)},
		// At y = 3.75 s est = 5 + 4 = 9 exactly: allowed, est 10.
		step{advance: ms, want: allowed(0, 16250*ms)},
		// cur 5 now: 8·(10 − y)/10 + 5 + 1 ≤ 10 at y = 5 s, 1.25 s away.
		step{want: denied(0, 1250*ms, 16250*ms)},
		step{advance: 1250 * ms, want: allowed(0, 15*time.Second)},
	)
	play(t, h, "weighted", ratelimit.Limit{Rate: 1, Burst: 10}, steps)
}

// swcBoundaryBurst: the fixed window's boundary burst does not pass. Burst at the end of
// one window still weighs fully at the start of the next.
func swcBoundaryBurst(t testing.TB, h harness) {
	var steps []step
	// 9.999 s, the last millisecond of window 0: ten pass. Reset: 20 − 9.999 s.
	for i := range 10 {
		s := step{want: allowed(9-i, 10001*ms)}
		if i == 0 {
			s.advance = 9999 * ms
		}
		steps = append(steps, s)
	}
	steps = append(steps,
		// cur = 10: this window is full, so the next must do; there 10·(10 − y)/10 + 1 ≤ 10
		// at y = 1 s. 1 ms + 1 s away.
		step{want: denied(0, 1001*ms, 10001*ms)},
		// 10 s, window 1: est = 10 × 10/10 = 10. Where a fixed window would let ten more
		// through, this one waits 1 s. Reset: prev alone counts, to the end of window 1.
		step{advance: ms, want: denied(0, time.Second, 10*time.Second)},
		// 11 s: est = 9, one passes.
		step{advance: time.Second, want: allowed(0, 19*time.Second)},
		// 15 s: est = 5 + 1 = 6, so four pass: fifteen in 5 s, against twenty for a
		// fixed window, and never more than Burst in one fixed window.
		step{advance: 4 * time.Second, n: 4, want: allowed(0, 15*time.Second)},
		// cur 5: 10·(10 − y)/10 + 5 + 1 ≤ 10 at y = 6 s.
		step{want: denied(0, time.Second, 15*time.Second)},
	)
	play(t, h, "edge", ratelimit.Limit{Rate: 1, Burst: 10}, steps)
}

// swcDenialTakesNothing: denials in a row leave both counts as they were.
func swcDenialTakesNothing(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 10, Burst: 3} // W = 300 ms
	steps := []step{
		{want: allowed(2, 600*ms)},
		{want: allowed(1, 600*ms)},
		{want: allowed(0, 600*ms)},
	}
	// cur = 3 = Burst: next window, where 3·(300 − y)/300 + 1 ≤ 3 at y = 100 ms.
	for range 10 {
		steps = append(steps, step{want: denied(0, 400*ms, 600*ms)})
	}
	steps = append(steps,
		// 400 ms, y = 100 ms: est = 3 × 200/300 = 2, and one passes, as if nothing had been
		// denied.
		step{advance: 400 * ms, want: allowed(0, 500*ms)},
		// cur 1: 3·(300 − y)/300 + 1 + 1 ≤ 3 at y = 200 ms.
		step{want: denied(0, 100*ms, 500*ms)},
	)
	play(t, h, "deny", limit, steps)
}

// swcAllowNIsAllOrNothing: a request for more than fits takes nothing.
func swcAllowNIsAllOrNothing(t testing.TB, h harness) {
	play(t, h, "cost", ratelimit.Limit{Rate: 1, Burst: 5}, []step{ // W = 5 s
		{n: 3, want: allowed(2, 10*time.Second)},
		// 3 + 3 > 5, so in window 1: 3·(5 − y)/5 + 3 ≤ 5 at y = 5/3 s, the first whole
		// µs being 1,666,667 (est 4.9999998; a µs earlier, 5.0000004).
		{n: 3, want: denied(2, 6666667*time.Microsecond, 10*time.Second)},
		{n: 2, want: allowed(0, 10*time.Second)},
		// 5·(5 − y)/5 + 5 ≤ 5 only at y = 5 s: the start of window 2, 10 s away.
		{n: 5, want: denied(0, 10*time.Second, 10*time.Second)},
		{advance: 10 * time.Second, n: 5, want: allowed(0, 10*time.Second)},
	})
}

// swcBucketIdentity: a bucket is (key, Rate, Burst); changing any of them is another bucket.
func swcBucketIdentity(t testing.TB, h harness) {
	one := ratelimit.Limit{Rate: 1, Burst: 1} // W = 1 s
	play(t, h, "id", one, []step{
		{want: allowed(0, 2*time.Second)},
		// Burst 1: est must reach 0, at the start of window 2.
		{want: denied(0, 2*time.Second, 2*time.Second)},
	})
	play(t, h, "id", ratelimit.Limit{Rate: 1, Burst: 2}, []step{{want: allowed(1, 4*time.Second)}})
	play(t, h, "id", ratelimit.Limit{Rate: 2, Burst: 1}, []step{{want: allowed(0, time.Second)}})
	play(t, h, "id2", one, []step{{want: allowed(0, 2*time.Second)}})
	play(t, h, "id", one, []step{{want: denied(0, 2*time.Second, 2*time.Second)}})
}
