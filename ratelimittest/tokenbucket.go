package ratelimittest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// tokenBucketRules are the rules of ratelimit.TokenBucket, to the nanosecond: GCRA's
// theoretical arrival time and the token bucket's refill, which decide alike.
var tokenBucketRules = []rule{
	{"WorkedExample", workedExample},
	{"RetryAfterIsExact", retryAfterIsExact},
	{"DenialTakesNothing", denialTakesNothing},
	{"AllowNIsAllOrNothing", allowNIsAllOrNothing},
	{"RefillStopsAtBurst", refillStopsAtBurst},
	{"ResetAfter", resetAfter},
	{"BucketIdentity", bucketIdentity},
	{"Invariants", invariants},
}

// workedExample is the contract's example: Rate 1/s, Burst 2, first request at 0.1 s; two
// pass at once, the third is denied with RetryAfter 1 s, one passes at 1.5 s. In GCRA
// terms T = 1 s and τ = 2 s; ResetAfter is TAT − now, Remaining ⌊(τ − (TAT − now)) / T⌋.
func workedExample(t testing.TB, h harness) {
	play(t, h, "worked example", ratelimit.Limit{Rate: 1, Burst: 2}, []step{
		// A at 0.1 s: TAT 0 → max(0.1, 0) + 1 = 1.1; 1.1 − 2 ≤ 0.1, allowed. Reset 1.1 − 0.1.
		{advance: 100 * ms, want: allowed(1, time.Second)},
		// B at 0.1 s: TAT 1.1 → 2.1; 2.1 − 2 = 0.1 ≤ 0.1, allowed on the line. Reset 2 s.
		{want: allowed(0, 2*time.Second)},
		// C at 0.1 s: 2.1 → 3.1; 3.1 − 2 = 1.1 > 0.1, denied, TAT stays 2.1.
		// RetryAfter = 1.1 − 0.1 = 1 s exactly.
		{want: denied(0, time.Second, 2*time.Second)},
		// D at 1.5 s: 2.1 → 3.1; 1.1 ≤ 1.5, allowed; 0.4 tokens left, so Remaining 0.
		// Reset 3.1 − 1.5 = 1.6 s.
		{advance: 1400 * ms, want: allowed(0, 1600*ms)},
	})
	// The table stops at D. A request E right after it would be told to come back in about
	// 0.6 s; the exact nanosecond is the backend's (a float64 bucket holds 0.3999999999999999
	// tokens there), so the exact-boundary rules below use binary fractions of a second.
}

// retryAfterIsExact: coming back after exactly RetryAfter is allowed, a millisecond
// earlier is not.
func retryAfterIsExact(t testing.TB, h harness) {
	play(t, h, "retry", ratelimit.Limit{Rate: 1, Burst: 2}, []step{
		{want: allowed(1, time.Second)},
		{want: allowed(0, 2*time.Second)},
		{want: denied(0, time.Second, 2*time.Second)},
		{advance: 999 * ms, want: denied(0, ms, 1001*ms)},
		{advance: ms, want: allowed(0, 2*time.Second)},
		{want: denied(0, time.Second, 2*time.Second)},
		// Fractional tokens: 0.375 s later the bucket holds 0.375 tokens.
		{advance: 375 * ms, want: denied(0, 625*ms, 1625*ms)},
		{advance: 625 * ms, want: allowed(0, 2*time.Second)},
	})
}

// denialTakesNothing: ten denials in a row leave the bucket exactly as it was.
func denialTakesNothing(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 10, Burst: 3} // one token per 100 ms
	steps := []step{
		{want: allowed(2, 100*ms)},
		{want: allowed(1, 200*ms)},
		{want: allowed(0, 300*ms)},
	}
	for range 10 {
		steps = append(steps, step{want: denied(0, 100*ms, 300*ms)})
	}
	steps = append(steps,
		step{advance: 100 * ms, want: allowed(0, 300*ms)},
		step{want: denied(0, 100*ms, 300*ms)},
	)
	play(t, h, "deny", limit, steps)
}

// allowNIsAllOrNothing: a request for more tokens than the bucket holds takes none.
func allowNIsAllOrNothing(t testing.TB, h harness) {
	play(t, h, "cost", ratelimit.Limit{Rate: 1, Burst: 5}, []step{
		{n: 3, want: allowed(2, 3*time.Second)},
		// 2 tokens held, 3 asked: 1 missing at 1 token/s.
		{n: 3, want: denied(2, time.Second, 3*time.Second)},
		{n: 2, want: allowed(0, 5*time.Second)},
		{n: 5, want: denied(0, 5*time.Second, 5*time.Second)},
		{advance: 2 * time.Second, n: 2, want: allowed(0, 5*time.Second)},
		{advance: 5 * time.Second, n: 5, want: allowed(0, 5*time.Second)},
	})
}

// refillStopsAtBurst: however long a bucket rests, it holds at most Burst tokens.
func refillStopsAtBurst(t testing.TB, h harness) {
	play(t, h, "cap", ratelimit.Limit{Rate: 100, Burst: 4}, []step{
		{n: 4, want: allowed(0, 40*ms)},
		{advance: time.Hour, want: allowed(3, 10*ms)},
		{n: 3, want: allowed(0, 40*ms)},
		{want: denied(0, 10*ms, 40*ms)},
	})
}

// resetAfter follows fractional tokens: Rate 2/s (T = 500 ms), Burst 4 (τ = 2 s).
func resetAfter(t testing.TB, h harness) {
	play(t, h, "reset", ratelimit.Limit{Rate: 2, Burst: 4}, []step{
		{want: allowed(3, 500*ms)},
		{want: allowed(2, time.Second)},
		// 2 tokens + 250 ms × 2/s = 2.5; after one, 1.5 left: Remaining 1, full in 2.5/2 s.
		{advance: 250 * ms, want: allowed(1, 1250*ms)},
		// After ResetAfter the bucket is full again: one taken leaves 3.
		{advance: 1250 * ms, want: allowed(3, 500*ms)},
	})
}

// bucketIdentity: a bucket is (key, Rate, Burst); changing any of them is another bucket.
func bucketIdentity(t testing.TB, h harness) {
	one := ratelimit.Limit{Rate: 1, Burst: 1}
	play(t, h, "id", one, []step{
		{want: allowed(0, time.Second)},
		{want: denied(0, time.Second, time.Second)},
	})
	play(t, h, "id", ratelimit.Limit{Rate: 1, Burst: 2}, []step{{want: allowed(1, time.Second)}})
	play(t, h, "id", ratelimit.Limit{Rate: 2, Burst: 1}, []step{{want: allowed(0, 500*ms)}})
	play(t, h, "id2", one, []step{{want: allowed(0, time.Second)}})
	// The first bucket kept its state through all of that.
	play(t, h, "id", one, []step{{want: denied(0, time.Second, time.Second)}})
}

// invariants checks, over a long irregular timeline, the rules that hold for every result:
// 0 ≤ Remaining ≤ Burst, RetryAfter is zero exactly when allowed, 0 ≤ ResetAfter ≤ Burst/Rate,
// and a denied request is allowed once its RetryAfter has passed.
func invariants(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 5, Burst: 8} // T = 200 ms, full in 1.6 s
	ctx := context.Background()
	rng := uint32(1)
	next := func(bound uint32) uint32 { // xorshift: deterministic, no shared state
		rng ^= rng << 13
		rng ^= rng >> 17
		rng ^= rng << 5
		return rng % bound
	}
	admitted, refused := 0, 0
	for i := range 500 {
		h.Advance(time.Duration(next(150)) * ms)
		n := int(next(3)) + 1
		res, err := h.Limiter.AllowN(ctx, "inv", limit, n)
		require.NoError(t, err)
		require.GreaterOrEqual(t, res.Remaining, 0, "step %d", i)
		require.LessOrEqual(t, res.Remaining, limit.Burst, "step %d", i)
		require.GreaterOrEqual(t, res.ResetAfter, time.Duration(0), "step %d", i)
		require.LessOrEqual(t, res.ResetAfter, 1600*ms, "step %d", i)
		require.Equal(t, res.Allowed, res.RetryAfter == 0, "step %d: %+v", i, res)
		if res.Allowed {
			admitted++
			// n tokens were just taken, so the bucket is at least n/Rate from full.
			require.GreaterOrEqual(t, res.ResetAfter, time.Duration(n)*200*ms, "step %d", i)
			continue
		}
		refused++
		h.Advance(res.RetryAfter)
		again, err := h.Limiter.AllowN(ctx, "inv", limit, n)
		require.NoError(t, err)
		require.True(t, again.Allowed, "step %d: denied again after RetryAfter %v", i, res.RetryAfter)
	}
	// The timeline must exercise both outcomes to mean anything.
	require.Positive(t, admitted)
	require.Positive(t, refused)
}
