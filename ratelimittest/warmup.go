package ratelimittest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// The rules of a token bucket with a warm-up (ratelimit.Limit.Warmup). With rate r, burst b, a
// warm-up of P and d into it, the bucket's warm clock reads W(d) = r·d(d + P)/(3P) tokens up
// to P and r·(2P/3 + (d − P)) after, and it can hold τ(d) = max(1, b·(P + 2d)/(3P)) tokens, b
// from P on. Its TAT T is counted on the warm clock; a request for n is admitted iff max(T −
// W, b − τ) ≤ b − n, and then T = max(T, W + b − τ) + n. It is cold, and starts its warm-up
// over (d = 0, T = 0, even for a request then denied), when new or once max(T, W(P)) + b ≤
// W(d) (https://github.com/sluice-go/ratelimit/blob/main/docs/algorithms.md#warm-up). Each
// figure below was worked out in exact rational arithmetic, away from any tie that float
// rounding could tip.

// warmRamp is the limit of most warm-up rules: 100 a second, a burst of 50, warm after 1 s.
// Cold, it holds τ(0) = 50/3 tokens and refills at 100/3 a second.
var warmRamp = ratelimit.Limit{Rate: 100, Burst: 50, Warmup: time.Second}

// warmupRules are the rules of ratelimit.TokenBucket with a warm-up.
var warmupRules = []rule{
	{"ColdStartRamp", warmColdStartRamp},
	{"RetryAfterIsExact", warmRetryAfterIsExact},
	{"WholeBurstAtColdStart", warmWholeBurstAtColdStart},
	{"RestartAfterRest", warmRestartAfterRest},
	{"BucketIdentity", warmBucketIdentity},
	{"InvalidWarmup", warmInvalid},
	{"Invariants", warmInvariants},
	{"Inspector", warmInspector},
	{"AllowAllRefuses", warmAllowAllRefuses},
}

// warmColdStartRamp: a client asks for a token every millisecond (ten times the rate) from
// a cold start. Under such a load the bucket admits what it holds at once, τ(0) = 16.67, so
// 16, then what the warm clock earns: r·f(d), which ramps from 100/3 to 100 a second, so
// W(k·100 ms) = (100/3)(k/10 + k²/100) tokens by the end of the k-th 100 ms. The count
// admitted by millisecond m is ⌊τ(0) + W(m)⌋; per 100 ms that is 20 (16 at once and 3.67
// earned, plus the fraction carried), then 4, 5, 6, 6, 7, 8, 8, 9, 10 (the ramp: 3.67 + 0.67k
// earned in the k-th), and from 1 s on 10, the plain bucket's 100 a second. A plain bucket
// under the same load admits 50 at once: the warm one stays below it at every millisecond,
// and no interval of length L ever sees more than b + r·L tokens admitted.
func warmColdStartRamp(t testing.TB, h harness) {
	plain := ratelimit.Limit{Rate: warmRamp.Rate, Burst: warmRamp.Burst}
	want := []int{20, 4, 5, 6, 6, 7, 8, 8, 9, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10}
	got := make([]int, len(want))
	var admitted []time.Duration // of the warm bucket, in µs since the first request
	warm, cold := 0, 0
	for ms := range 100 * len(want) {
		if ms > 0 {
			h.Advance(time.Millisecond)
		}
		at := time.Duration(ms) * time.Millisecond
		res := allowOne(t, h, "ramp", warmRamp)
		if res.Allowed {
			got[ms/100]++
			warm++
			admitted = append(admitted, at)
		}
		if allowOne(t, h, "ramp", plain).Allowed {
			cold++
		}
		require.LessOrEqual(t, warm, cold, "at %v the warm bucket has admitted more than the plain one", at)
	}
	require.Equal(t, want, got, "admitted per 100 ms")
	require.Equal(t, 183, warm) // ⌊τ(0) + W(2 s)⌋ = ⌊16.67 + 166.67⌋
	// The plain bucket: 50 + 100 a second for 2 s, give or take the last, which falls on a
	// tie its float arithmetic decides.
	require.InDelta(t, 249.5, cold, 0.5)
	checkBound(t, warmRamp, admitted, nil)
}

// allowOne asks for one token of (key, limit).
func allowOne(t testing.TB, h harness, key string, limit ratelimit.Limit) ratelimit.Result {
	t.Helper()
	res, err := h.Limiter.Allow(context.Background(), key, limit)
	require.NoError(t, err)
	return res
}

// checkBound checks the token bucket's guarantee on admissions at times at (of costs[i]
// tokens each, 1 if costs is nil): no interval of length L, from one admission to a later
// one, holds more than Burst + Rate·L tokens.
func checkBound(t testing.TB, limit ratelimit.Limit, at []time.Duration, costs []int) {
	t.Helper()
	cost := func(i int) int {
		if costs == nil {
			return 1
		}
		return costs[i]
	}
	for i := range at {
		tokens := 0
		for j := i; j < len(at); j++ {
			tokens += cost(j)
			if l := at[j] - at[i]; float64(tokens) > float64(limit.Burst)+limit.Rate*l.Seconds() {
				require.Failf(t, "above Burst + Rate·L", "%d tokens admitted in %v, from %v", tokens, l, at[i])
			}
		}
	}
}

// warmRetryAfterIsExact: cold, the bucket holds τ(0) = 16.67, and a request for 17 is denied
// (its warm-up begins nonetheless). τ reaches 17 when 50·(P + 2d)/(3P) = 17, at d = 10 ms
// exactly: RetryAfter. 1 µs before it is still denied; at it, admitted, with T = W(10 ms) +
// 50 = 50.3367. Then T − W = 50 leaves nothing, and the bucket holds all it can again
// when W catches up with T: d(d + P)/(3P)·10⁻⁴ = 50.3367 at d = 826,687.9 µs, ResetAfter
// 816,688 µs. One more token is 1 token of the warm clock away, d(d + P) growing by 3·10¹⁰
// from 10 ms: 28,610 µs.
func warmRetryAfterIsExact(t testing.TB, h harness) {
	play(t, h, "retry", warmRamp, []step{
		// Remaining: ⌊b − max(T − W, b − τ)⌋ = ⌊τ⌋ = 16.
		{n: 17, want: denied(16, 10*ms, 0)},
		{advance: 10*ms - time.Microsecond, n: 17, want: denied(16, time.Microsecond, 0)},
		{advance: time.Microsecond, n: 17, want: allowed(0, 816688*time.Microsecond)},
		{want: denied(0, 28610*time.Microsecond, 816688*time.Microsecond)},
	})
}

// warmWholeBurstAtColdStart: a request for the whole burst can pass only once τ = b, at the
// end of the warm-up: RetryAfter 1 s, exactly. The warm-up it began runs to its end however
// long the request takes to come back (the bucket could only go cold 500 ms after the
// warm-up, once W(d) = W(P) + b): at 1 s, or at 1.4 s, it is admitted.
func warmWholeBurstAtColdStart(t testing.TB, h harness) {
	for _, back := range []time.Duration{time.Second, 1400 * ms} {
		key := "whole" + back.String()
		play(t, h, key, warmRamp, []step{
			{n: 50, want: denied(16, time.Second, 0)},
			// T = W + 50: full again 50 tokens of 100 a second later.
			{advance: back, n: 50, want: allowed(0, 500*ms)},
			{want: denied(0, 10*ms, 500*ms)},
		})
	}
}

// warmRestartAfterRest: one token at a cold start leaves T = 50 − 16.67 + 1 = 34.33, below
// W(P) = 66.67, so the bucket goes cold once W(d) = 66.67 + 50, at d = 1.5 s. A millisecond
// before, it is warm and full: 50 at once. A millisecond after, it is cold again: 16 at once
// (τ(0) = 16.67), and the next token when W = 0.33 (T = 49.33 against b − 1), at 9,902 µs;
// 1 µs early is denied.
func warmRestartAfterRest(t testing.TB, h harness) {
	play(t, h, "warm", warmRamp, []step{
		{want: allowed(15, 631371*time.Microsecond)},
		{advance: 1499 * ms, n: 50, want: allowed(0, 500*ms)},
		{want: denied(0, 10*ms, 500*ms)},
	})
	play(t, h, "cold", warmRamp, []step{
		{want: allowed(15, 631371*time.Microsecond)},
		{advance: 1501 * ms, n: 16, want: allowed(0, 815295*time.Microsecond)},
		{want: denied(0, 9902*time.Microsecond, 815295*time.Microsecond)},
		{advance: 9901 * time.Microsecond, want: denied(0, time.Microsecond, 805394*time.Microsecond)},
		{advance: time.Microsecond, want: allowed(0, 816748*time.Microsecond)},
	})
}

// warmBucketIdentity: a warm-up is part of the limit, so of the bucket: the same key and
// rate and burst with another warm-up, or none, is another bucket.
func warmBucketIdentity(t testing.TB, h harness) {
	plain := ratelimit.Limit{Rate: warmRamp.Rate, Burst: warmRamp.Burst}
	other := warmRamp
	other.Warmup = 2 * time.Second
	play(t, h, "id", plain, []step{{n: 50, want: allowed(0, 500*ms)}})
	play(t, h, "id", warmRamp, []step{{n: 16, want: allowed(0, 815295*time.Microsecond)}})
	play(t, h, "id", other, []step{{n: 16, want: allowed(0, 989975*time.Microsecond)}})
	play(t, h, "id", plain, []step{{want: denied(0, 10*ms, 500*ms)}})
	play(t, h, "id", warmRamp, []step{{want: denied(0, 9902*time.Microsecond, 815295*time.Microsecond)}})
}

// warmInvalid: a warm-up that Limit.Validate refuses, or a rate above 10⁶ a second with a
// warm-up, is ratelimit.ErrInvalidArgument, before anything is decided.
func warmInvalid(t testing.TB, h harness) {
	for _, limit := range []ratelimit.Limit{
		{Rate: 1, Burst: 1, Warmup: -time.Second},
		{Rate: 1, Burst: 1, Warmup: 1500 * time.Nanosecond},
		{Rate: 1, Burst: 1, Warmup: args.MaxWarmup + time.Microsecond},
		{Rate: 2e6, Burst: 1, Warmup: time.Second},
	} {
		res, err := h.Limiter.Allow(context.Background(), "bad", limit)
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "%v", limit)
		require.Equal(t, ratelimit.Result{Limit: limit}, res)
		if v, ok := ratelimit.As[ratelimit.LimitValidator](h.Limiter); ok {
			require.ErrorIs(t, v.ValidateLimit(limit), ratelimit.ErrInvalidArgument, "%v", limit)
		}
	}
	if v, ok := ratelimit.As[ratelimit.LimitValidator](h.Limiter); ok {
		require.NoError(t, v.ValidateLimit(warmRamp))
	}
}

// warmNotSupported: every algorithm but the token bucket refuses a warm-up.
func warmNotSupported(t testing.TB, h harness) {
	ctx := context.Background()
	res, err := h.Limiter.Allow(ctx, "warm", warmRamp)
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	require.Equal(t, ratelimit.Result{Limit: warmRamp}, res)
	if v, ok := ratelimit.As[ratelimit.LimitValidator](h.Limiter); ok {
		require.ErrorIs(t, v.ValidateLimit(warmRamp), ratelimit.ErrNotSupported)
	}
	require.ErrorIs(t, h.Limiter.Wait(ctx, "warm", warmRamp), ratelimit.ErrNotSupported)
}

// warmInvariants plays a long irregular timeline, rests long enough to go cold included, and
// checks what holds for every result: 0 ≤ Remaining ≤ Burst; RetryAfter is zero exactly when
// allowed, and at most the warm-up plus a drained bucket's refill; a denied request is
// admitted once its RetryAfter has passed, and still a moment later; and no interval ever
// saw more than Burst + Rate·L tokens.
func warmInvariants(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 40, Burst: 12, Warmup: 700 * ms}
	rng := rand.New(rand.NewPCG(18, 2))
	ctx := context.Background()
	var now time.Duration
	var at []time.Duration
	var costs []int
	advance := func(d time.Duration) {
		h.Advance(d)
		now += d
	}
	ask := func(n int) ratelimit.Result {
		res, err := h.Limiter.AllowN(ctx, "inv", limit, n)
		require.NoError(t, err)
		if res.Allowed {
			at, costs = append(at, now), append(costs, n)
		}
		return res
	}
	admitted, refused := 0, 0
	for i := range 600 {
		switch rng.IntN(20) {
		case 0:
			advance(time.Duration(rng.IntN(3000)) * ms) // a rest, often long enough to go cold
		default:
			advance(time.Duration(rng.IntN(40_000)) * time.Microsecond)
		}
		n := 1 + rng.IntN(3)
		if rng.IntN(8) == 0 {
			n = 1 + rng.IntN(limit.Burst)
		}
		res := ask(n)
		require.GreaterOrEqual(t, res.Remaining, 0, "step %d", i)
		require.LessOrEqual(t, res.Remaining, limit.Burst, "step %d", i)
		require.GreaterOrEqual(t, res.ResetAfter, time.Duration(0), "step %d", i)
		require.Equal(t, res.Allowed, res.RetryAfter == 0, "step %d: %+v", i, res)
		if res.Allowed {
			admitted++
			continue
		}
		refused++
		require.LessOrEqual(t, res.RetryAfter, limit.Warmup+300*ms, "step %d", i)
		// Late by up to half a refill: a warm-up is never started over in between.
		late := time.Duration(rng.IntN(150)) * ms * time.Duration(rng.IntN(2))
		advance(res.RetryAfter + late)
		again := ask(n)
		require.True(t, again.Allowed, "step %d: denied again %v after RetryAfter %v", i, late, res.RetryAfter)
	}
	require.Positive(t, admitted)
	require.Positive(t, refused)
	checkBound(t, limit, at, costs)
}

// warmInspector: Peek, Refund and Reset on a bucket with a warm-up, for a limiter that is
// an Inspector. Peek answers as AllowN would and writes nothing, not even the warm-up that
// AllowN would begin: 5 ms after a Peek of 17, the bucket is still new. Then 16 taken leave
// T = 50 − 16.67 + 16 = 49.33; 10 given back, 39.33, and a token would leave 9, the bucket
// holding all it can when W reaches 40.33, at 708,305 µs; 50 given back stop at
// W + b − τ = 33.33, a new bucket's. Reset makes a new bucket, cold again.
func warmInspector(t testing.TB, h harness) {
	in, ok := ratelimit.As[ratelimit.Inspector](h.Limiter)
	if !ok {
		return
	}
	ctx := context.Background()
	us := time.Microsecond
	check := func(want ratelimit.Result, res ratelimit.Result, err error) {
		t.Helper()
		require.NoError(t, err)
		want.Limit = warmRamp
		require.Equal(t, want, res)
	}
	res, err := in.Peek(ctx, "in", warmRamp, 17)
	check(denied(16, 10*ms, 0), res, err)
	res, err = in.Peek(ctx, "in", warmRamp, 1)
	check(allowed(15, 631371*us), res, err)
	// a missing bucket: nothing to give back
	res, err = in.Refund(ctx, "in", warmRamp, 5, ratelimit.Charge{})
	check(allowed(15, 631371*us), res, err)
	h.Advance(5 * ms)
	play(t, h, "in", warmRamp, []step{{n: 16, want: allowed(0, 815295*us)}})
	res, err = in.Refund(ctx, "in", warmRamp, 10, ratelimit.Charge{})
	check(allowed(9, 708305*us), res, err)
	res, err = in.Refund(ctx, "in", warmRamp, 50, ratelimit.Charge{})
	check(allowed(15, 631371*us), res, err)
	require.NoError(t, in.Reset(ctx, "in", warmRamp))
	play(t, h, "in", warmRamp, []step{{n: 17, want: denied(16, 10*ms, 0)}})
}

// warmAllowAllRefuses: AllowAll refuses a limit with a warm-up, as bad input naming its
// entry, with ratelimit.ErrNotSupported, and takes nothing from the other entries. A cold
// bucket must record that its warm-up began even when it denies, and an all-or-nothing
// decision that denies writes nothing.
func warmAllowAllRefuses(t testing.TB, h harness) {
	ml, ok := ratelimit.As[ratelimit.MultiLimiter](h.Limiter)
	if !ok {
		return
	}
	plain := ratelimit.Limit{Rate: 1, Burst: 1}
	mr, err := ml.AllowAll(context.Background(), []ratelimit.Request{
		{Key: "all", Limit: plain, Name: "plain"},
		{Key: "all", Limit: warmRamp, Name: "warm"},
	})
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	require.ErrorContains(t, err, `AllowAll: request 1 ("warm"): ratelimit: not supported: AllowAll of a limit with a warm-up`)
	require.False(t, mr.Allowed)
	require.Equal(t, 1, mr.Binding)
	play(t, h, "all", plain, []step{{want: allowed(0, time.Second)}})
}
