// Package conformance is the table of rules every ratelimit.Limiter backend obeys, written
// once and run against each backend, so that the local and the Redis backends give the same
// answers to the same questions. Expected values come from the seed documents (the GCRA and
// token bucket tables) and from first principles, never from what a backend returned.
package conformance

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// Harness is one fresh backend under test.
type Harness struct {
	// Limiter is the limiter under test, with no buckets yet. The function that made the
	// Harness closes it at the test's cleanup.
	Limiter ratelimit.Limiter
	// Advance moves the limiter's clock forward by d. The clock must not move otherwise.
	Advance func(d time.Duration)
	// CanWait says whether Limiter.Wait is implemented; if not, it must return
	// ratelimit.ErrNotSupported.
	CanWait bool
}

// Run runs every rule as a subtest, each on a Harness of its own made by newHarness.
func Run(t *testing.T, newHarness func(t *testing.T) Harness) {
	rules := []struct {
		name string
		run  func(t *testing.T, h Harness)
	}{
		{"SeedTimeline", seedTimeline},
		{"RetryAfterIsExact", retryAfterIsExact},
		{"DenialTakesNothing", denialTakesNothing},
		{"AllowNIsAllOrNothing", allowNIsAllOrNothing},
		{"RefillStopsAtBurst", refillStopsAtBurst},
		{"ResetAfter", resetAfter},
		{"BucketIdentity", bucketIdentity},
		{"InvalidInput", invalidInput},
		{"Invariants", invariants},
		{"Concurrency", concurrency},
		{"AnyKey", anyKey},
		{"Wait", wait},
		{"Close", closeRule},
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) { r.run(t, newHarness(t)) })
	}
}

// step is one moment of a timeline: move the clock, ask for n tokens (1 if n is 0), and
// expect a result (its Limit field is filled in by play).
type step struct {
	advance time.Duration
	n       int
	want    ratelimit.Result
}

// play runs steps in order against one bucket and checks every result exactly.
func play(t *testing.T, h Harness, key string, limit ratelimit.Limit, steps []step) {
	t.Helper()
	for i, s := range steps {
		h.Advance(s.advance)
		n := max(s.n, 1)
		got, err := h.Limiter.AllowN(context.Background(), key, limit, n)
		require.NoError(t, err, "step %d", i)
		want := s.want
		want.Limit = limit
		require.Equal(t, want, got, "step %d (n=%d)", i, n)
	}
}

func allowed(remaining int, resetAfter time.Duration) ratelimit.Result {
	return ratelimit.Result{Allowed: true, Remaining: remaining, ResetAfter: resetAfter}
}

func denied(remaining int, retryAfter, resetAfter time.Duration) ratelimit.Result {
	return ratelimit.Result{Remaining: remaining, RetryAfter: retryAfter, ResetAfter: resetAfter}
}

const ms = time.Millisecond

// seedTimeline is the example of seed 000: Rate 1/s, Burst 2, first request at 0.1 s. In GCRA
// terms T = 1 s and τ = 2 s; ResetAfter is TAT − now, Remaining ⌊(τ − (TAT − now)) / T⌋.
func seedTimeline(t *testing.T, h Harness) {
	play(t, h, "seed", ratelimit.Limit{Rate: 1, Burst: 2}, []step{
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
func retryAfterIsExact(t *testing.T, h Harness) {
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
func denialTakesNothing(t *testing.T, h Harness) {
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
func allowNIsAllOrNothing(t *testing.T, h Harness) {
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
func refillStopsAtBurst(t *testing.T, h Harness) {
	play(t, h, "cap", ratelimit.Limit{Rate: 100, Burst: 4}, []step{
		{n: 4, want: allowed(0, 40*ms)},
		{advance: time.Hour, want: allowed(3, 10*ms)},
		{n: 3, want: allowed(0, 40*ms)},
		{want: denied(0, 10*ms, 40*ms)},
	})
}

// resetAfter follows fractional tokens: Rate 2/s (T = 500 ms), Burst 4 (τ = 2 s).
func resetAfter(t *testing.T, h Harness) {
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
func bucketIdentity(t *testing.T, h Harness) {
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

// invalidInput: every bad argument maps to its sentinel error, with Allowed false, and
// touches no bucket.
func invalidInput(t *testing.T, h Harness) {
	ok := ratelimit.Limit{Rate: 1, Burst: 3}
	cases := []struct {
		name  string
		key   string
		limit ratelimit.Limit
		n     int
		want  error
	}{
		{"EmptyKey", "", ok, 1, ratelimit.ErrKeyEmpty},
		{"NaNRate", "bad", ratelimit.Limit{Rate: math.NaN(), Burst: 3}, 1, ratelimit.ErrInvalidLimit},
		{"PlusInfRate", "bad", ratelimit.Limit{Rate: math.Inf(1), Burst: 3}, 1, ratelimit.ErrInvalidLimit},
		{"MinusInfRate", "bad", ratelimit.Limit{Rate: math.Inf(-1), Burst: 3}, 1, ratelimit.ErrInvalidLimit},
		{"ZeroRate", "bad", ratelimit.Limit{Rate: 0, Burst: 3}, 1, ratelimit.ErrInvalidLimit},
		{"NegativeRate", "bad", ratelimit.Limit{Rate: -1, Burst: 3}, 1, ratelimit.ErrInvalidLimit},
		{"ZeroBurst", "bad", ratelimit.Limit{Rate: 1, Burst: 0}, 1, ratelimit.ErrInvalidLimit},
		{"NegativeBurst", "bad", ratelimit.Limit{Rate: 1, Burst: -1}, 1, ratelimit.ErrInvalidLimit},
		{"ZeroLimit", "bad", ratelimit.Limit{}, 1, ratelimit.ErrInvalidLimit},
		{"ZeroCost", "bad", ok, 0, ratelimit.ErrInvalidCost},
		{"NegativeCost", "bad", ok, -1, ratelimit.ErrInvalidCost},
		{"CostAboveBurst", "bad", ok, 4, ratelimit.ErrExceedsBurst},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := h.Limiter.AllowN(ctx, c.key, c.limit, c.n)
			require.ErrorIs(t, err, c.want)
			assert.False(t, res.Allowed)
			if c.n == 1 {
				res, err = h.Limiter.Allow(ctx, c.key, c.limit)
				require.ErrorIs(t, err, c.want)
				assert.False(t, res.Allowed)
			}
		})
	}
	// None of the calls above took a token from the valid bucket "bad".
	play(t, h, "bad", ok, []step{{n: 3, want: allowed(0, 3*time.Second)}})
}

// invariants checks, over a long irregular timeline, the rules that hold for every result:
// 0 ≤ Remaining ≤ Burst, RetryAfter is zero exactly when allowed, 0 ≤ ResetAfter ≤ Burst/Rate,
// and a denied request is allowed once its RetryAfter has passed.
func invariants(t *testing.T, h Harness) {
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

// concurrency: 64 goroutines hammer one bucket whose clock stands still; exactly Burst win.
func concurrency(t *testing.T, h Harness) {
	const goroutines, attempts = 64, 8
	limit := ratelimit.Limit{Rate: 1, Burst: 100}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for range goroutines {
		wg.Go(func() {
			for range attempts {
				res, err := h.Limiter.Allow(context.Background(), "hot", limit)
				if err != nil {
					errs <- err
					return
				}
				if res.Allowed {
					admitted.Add(1)
				} else if res.RetryAfter <= 0 {
					errs <- errors.New("denied with no RetryAfter")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(limit.Burst), admitted.Load())
}

// anyKey: any non-empty string is a key of its own, including ones that mean something to
// Redis (braces, colons), unicode, and very long ones.
func anyKey(t *testing.T, h Harness) {
	keys := []string{
		"a", "{a}", "{", "}", "a:b:c", "ratelimit:a", "über-ключ-鍵", " ", "\x00",
		strings.Repeat("k", 10<<10), strings.Repeat("k", 10<<10) + "x",
	}
	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	for _, k := range keys {
		play(t, h, k, limit, []step{{want: allowed(1, time.Second)}})
	}
	for _, k := range keys {
		play(t, h, k, limit, []step{{want: allowed(0, 2*time.Second)}})
	}
}

// wait covers the parts of Wait that need no time to pass: a backend's own tests cover
// blocking.
func wait(t *testing.T, h Harness) {
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 2} // a token an hour
	ctx := context.Background()
	if !h.CanWait {
		require.ErrorIs(t, h.Limiter.Wait(ctx, "wait", limit), ratelimit.ErrNotSupported)
		return
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, h.Limiter.Wait(canceled, "wait", limit), context.Canceled)
	require.ErrorIs(t, h.Limiter.Wait(ctx, "wait", ratelimit.Limit{}), ratelimit.ErrInvalidLimit)
	require.ErrorIs(t, h.Limiter.Wait(ctx, "", limit), ratelimit.ErrKeyEmpty)

	// The canceled Wait took nothing: the first Wait gets a token at once.
	require.NoError(t, h.Limiter.Wait(ctx, "wait", limit))
	play(t, h, "wait", limit, []step{{want: allowed(0, 2*time.Hour)}})

	// The next token is an hour away and the deadline ten seconds: fail at once.
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := h.Limiter.Wait(short, "wait", limit)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, short.Err(), "Wait waited for a deadline it knew it would miss")
}

// closeRule: after Close every call fails with ErrClosed, and Close can be called again.
func closeRule(t *testing.T, h Harness) {
	limit := ratelimit.Limit{Rate: 1, Burst: 1}
	ctx := context.Background()
	require.NoError(t, h.Limiter.Close())
	_, err := h.Limiter.Allow(ctx, "closed", limit)
	require.ErrorIs(t, err, ratelimit.ErrClosed)
	_, err = h.Limiter.AllowN(ctx, "closed", limit, 1)
	require.ErrorIs(t, err, ratelimit.ErrClosed)
	require.ErrorIs(t, h.Limiter.Wait(ctx, "closed", limit), ratelimit.ErrClosed)
	require.NoError(t, h.Limiter.Close())
}
