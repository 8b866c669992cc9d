package ratelimittest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// keepRulesOf are the rules of ratelimit.Limit.KeepUsage on algorithm alg: one key whose
// limit changes between calls keeps the usage it has spent. Every limit names alg, so the
// rules hold whatever the limiter's default.
func keepRulesOf(alg ratelimit.Algorithm) []rule {
	rules := []rule{{"Identity", keepIdentity}, {"Refused", keepRefused}}
	switch alg {
	case ratelimit.TokenBucket:
		rules = append(rules, rule{"DeficitCarries", keepDeficit}, rule{"Inspector", keepInspector})
	case ratelimit.LeakyBucket:
		// The token bucket's timeline decides alike; each admission waits for its turn.
		rules = append(rules, rule{"DeficitCarries", withDelays(keepDeficit, 0, 0, 0, 3*time.Second, 2*time.Second, 0, 6*time.Second, 0, 0)})
	case ratelimit.FixedWindow:
		rules = append(rules, rule{"CountCarries", keepFixedWindow})
	case ratelimit.SlidingWindowCounter:
		rules = append(rules, rule{"CountsCarry", keepSlidingCounter})
	case ratelimit.SlidingWindowLog:
		rules = append(rules, rule{"LogCarries", keepSlidingLog})
	}
	return append(rules, rule{"AllowAll", keepAllowAll})
}

// keepStep is a step of a timeline whose limit changes: the limit is the step's.
type keepStep struct {
	advance time.Duration
	limit   ratelimit.Limit
	n       int
	want    ratelimit.Result
}

// playKeep runs steps in order against key and checks every result exactly.
func playKeep(t testing.TB, h harness, key string, steps []keepStep) {
	t.Helper()
	for i, s := range steps {
		h.Advance(s.advance)
		n := max(s.n, 1)
		got, err := h.Limiter.AllowN(context.Background(), key, s.limit, n)
		require.NoError(t, err, "step %d", i)
		want := s.want
		want.Limit = s.limit
		require.Equal(t, want, uncharged(t, got), "step %d (n=%d, %v)", i, n, s.limit)
	}
}

// keep returns limit with KeepUsage and algorithm alg.
func keep(alg ratelimit.Algorithm, rate float64, burst int) ratelimit.Limit {
	return ratelimit.Limit{Rate: rate, Burst: burst, Algorithm: alg, KeepUsage: true}
}

// keepDeficit: a token bucket keeps the tokens it is missing, D, across its limit's changes.
// Remaining is Burst − D, at least 0; a lower Burst does not forgive (a bucket with
// D > Burst − n admits nothing until it has refilled to Burst − n); a higher one gives the
// difference at once. The time since the last admission refills at that admission's Rate:
// a denial under another limit is decided at it, and the new Rate applies from the next
// admission on.
func keepDeficit(t testing.TB, h harness) {
	alg := ratelimit.TokenBucket
	if h.Algorithm == ratelimit.LeakyBucket {
		alg = ratelimit.LeakyBucket
	}
	a, b := keep(alg, 1, 10), keep(alg, 1, 4)
	c, d := keep(alg, 2, 20), keep(alg, 0.5, 4)
	playKeep(t, h, "k", []keepStep{
		{limit: a, n: 6, want: allowed(4, 6*time.Second)},         // D = 6
		{limit: b, want: denied(0, 3*time.Second, 6*time.Second)}, // 6 > 4 − 1: 3 s at 1/s
		{advance: 2 * time.Second, limit: b, want: denied(0, time.Second, 4*time.Second)},
		{advance: time.Second, limit: b, want: allowed(0, 4*time.Second)}, // D = 3, then 4
		{limit: c, want: allowed(15, 2500*ms)},                            // D = 4, then 5, at 2/s
		// 3.5 s: D = 5 − 0.5 s·2 = 4 > 4 − 1, so denied, at 2/s: 0.5 s to D = 3, 2 s to 0.
		{advance: 500 * ms, limit: d, want: denied(0, 500*ms, 2*time.Second)},
		{advance: 500 * ms, limit: d, want: allowed(0, 8*time.Second)}, // D = 3, then 4, at 0.5/s
		{limit: a, n: 10, want: denied(6, 8*time.Second, 8*time.Second)},
		{advance: 8 * time.Second, limit: a, n: 10, want: allowed(0, 10*time.Second)},
	})
}

// keepInspector: Peek, Refund and Reset of a token bucket under another limit than the
// admission's see and change the same usage.
func keepInspector(t testing.TB, h harness) {
	ins, ok := ratelimit.As[ratelimit.Inspector](h.Limiter)
	if !ok {
		return
	}
	ctx := context.Background()
	a, b, c := keep(ratelimit.TokenBucket, 1, 10), keep(ratelimit.TokenBucket, 1, 4), keep(ratelimit.TokenBucket, 2, 20)
	playKeep(t, h, "k", []keepStep{{limit: a, n: 6, want: allowed(4, 6*time.Second)}})
	got, err := ins.Peek(ctx, "k", b, 1)
	require.NoError(t, err)
	require.Equal(t, ratelimit.Result{Limit: b, RetryAfter: 3 * time.Second, ResetAfter: 6 * time.Second}, got)
	// Three back: D = 3, and a token of Burst 4 would leave 0.
	got, err = ins.Refund(ctx, "k", b, 3, ratelimit.Charge{})
	require.NoError(t, err)
	require.Equal(t, ratelimit.Result{Limit: b, Allowed: true, ResetAfter: 4 * time.Second}, got)
	require.NoError(t, ins.Reset(ctx, "k", c))
	playKeep(t, h, "k", []keepStep{{limit: a, n: 10, want: allowed(0, 10*time.Second)}})
}

// keepFixedWindow: the count of a window carries across limits of the same window length,
// W = Burst/Rate = 10 s; a limit of another length is another bucket.
func keepFixedWindow(t testing.TB, h harness) {
	alg := ratelimit.FixedWindow
	a, b, c := keep(alg, 1, 10), keep(alg, 0.5, 5), keep(alg, 2, 20)
	e := keep(alg, 1, 5) // W = 5 s
	playKeep(t, h, "k", []keepStep{
		{limit: a, n: 7, want: allowed(3, 10*time.Second)},
		{limit: b, want: denied(0, 10*time.Second, 10*time.Second)}, // 7 + 1 > 5
		{advance: time.Second, limit: c, want: allowed(12, 9*time.Second)},
		{limit: e, n: 5, want: allowed(0, 4*time.Second)}, // a window of its own
		{limit: a, want: allowed(1, 9*time.Second)},
		{advance: 9 * time.Second, limit: b, want: allowed(4, 10*time.Second)}, // a new window
	})
}

// keepSlidingCounter: both counts carry across limits of one window length, W = 10 s, and
// the estimate prev·(W − x)/W + cur is taken against each call's Burst.
func keepSlidingCounter(t testing.TB, h harness) {
	alg := ratelimit.SlidingWindowCounter
	a, b, c := keep(alg, 1, 10), keep(alg, 0.5, 5), keep(alg, 2, 20)
	playKeep(t, h, "k", []keepStep{
		{limit: a, n: 7, want: allowed(3, 20*time.Second)},
		// 7 > 5 − 1: in the next window, 7·(W − y)/W ≤ 4 from y = ⌈W − 4W/7⌉ = 4,285,715 µs.
		{limit: b, want: denied(0, 14285715*time.Microsecond, 20*time.Second)},
		{advance: time.Second, limit: c, want: allowed(12, 19*time.Second)},
		// 15 s: the next window, 5 s in: 8·(5/10) = 4 ≤ 4, then 5.
		{advance: 14 * time.Second, limit: b, want: allowed(0, 15*time.Second)},
	})
}

// keepSlidingLog: the log carries whole, and each call counts it over its own window; a log
// is forgotten once the window of its last admission has passed since it.
func keepSlidingLog(t testing.TB, h harness) {
	alg := ratelimit.SlidingWindowLog
	a, b, c := keep(alg, 1, 5), keep(alg, 2, 20), keep(alg, 0.5, 2) // W = 5 s, 10 s, 4 s
	playKeep(t, h, "k", []keepStep{
		{limit: a, n: 3, want: allowed(2, 5*time.Second)},
		// 3 + 1 > 2: the second oldest, at 0, leaves at 4 s.
		{advance: time.Second, limit: c, want: denied(0, 3*time.Second, 3*time.Second)},
		{advance: time.Second, limit: b, want: allowed(16, 10*time.Second)}, // 3 + 1 in 10 s
		{advance: 2 * time.Second, limit: c, want: allowed(0, 4*time.Second)},
		// 9 s: the last admission, at 4 s under W = 4 s, has passed: the log is forgotten,
		// though the entry at 2 s is within B's 10 s.
		{advance: 5 * time.Second, limit: b, want: allowed(19, 10*time.Second)},
	})
}

// keepIdentity: a limit with KeepUsage is one bucket with the other limits of its key and
// algorithm that have it, and none with the same limit without it, nor with another
// algorithm's.
func keepIdentity(t testing.TB, h harness) {
	a := keep(h.Algorithm, 1, 4)
	b := keep(h.Algorithm, 1, 4)
	playKeep(t, h, "id", []keepStep{{limit: a, n: 4, want: allowed(0, keepReset(h.Algorithm, 4*time.Second))}})
	plain := a
	plain.KeepUsage = false
	got, err := h.Limiter.AllowN(context.Background(), "id", plain, 4)
	require.NoError(t, err)
	require.True(t, got.Allowed, "the same limit without KeepUsage is another bucket")
	got, err = h.Limiter.Allow(context.Background(), "id", b)
	require.NoError(t, err)
	require.False(t, got.Allowed, "the same limit with KeepUsage is the same bucket")
	for _, other := range h.Algorithms {
		if other == h.Algorithm {
			continue
		}
		got, err := h.Limiter.AllowN(context.Background(), "id", keep(other, 1, 4), 4)
		require.NoError(t, err)
		require.True(t, got.Allowed, "%v is another bucket", other)
	}
}

// keepRefused: KeepUsage with a warm-up is not supported (ratelimit.ErrNotSupported), at
// decision time and, for a LimitValidator, before; nor is a token bucket above 10⁶ tokens a
// second (ratelimit.ErrInvalidArgument), which no Redis backend accepts anyway.
func keepRefused(t testing.TB, h harness) {
	warm := ratelimit.Limit{Rate: 10, Burst: 10, Warmup: time.Second, Algorithm: ratelimit.TokenBucket, KeepUsage: true}
	fast := ratelimit.Limit{Rate: 2e6, Burst: 2e6, Algorithm: ratelimit.TokenBucket, KeepUsage: true}
	if !slices.Contains(h.Algorithms, ratelimit.TokenBucket) {
		return
	}
	for _, c := range []struct {
		limit ratelimit.Limit
		want  error
	}{{warm, ratelimit.ErrNotSupported}, {fast, ratelimit.ErrInvalidArgument}} {
		res, err := h.Limiter.Allow(context.Background(), "refused", c.limit)
		require.ErrorIs(t, err, c.want, "%v", c.limit)
		require.False(t, res.Allowed)
		if v, ok := ratelimit.As[ratelimit.LimitValidator](h.Limiter); ok {
			require.ErrorIs(t, v.ValidateLimit(c.limit), c.want, "%v", c.limit)
		}
	}
}

// keepReset is the ResetAfter of a drained bucket of Burst 4 at 1/s on alg, at the start of
// a timeline (a whole minute).
func keepReset(alg ratelimit.Algorithm, d time.Duration) time.Duration {
	if alg == ratelimit.SlidingWindowCounter {
		return 2 * d // until the next window has passed too
	}
	return d
}

// keepAllowAll: AllowAll decides buckets with KeepUsage as AllowN does, and refuses two
// entries of one such bucket.
func keepAllowAll(t testing.TB, h harness) {
	ml, ok := ratelimit.As[ratelimit.MultiLimiter](h.Limiter)
	if !ok {
		return
	}
	a, b := keep(h.Algorithm, 1, 4), keep(h.Algorithm, 2, 8) // W = 4 s both
	ctx := context.Background()
	mr, err := ml.AllowAll(ctx, []ratelimit.Request{{Key: "x", Limit: a, N: 3}, {Key: "y", Limit: b, N: 1}})
	require.NoError(t, err)
	require.True(t, mr.Allowed)
	// x under b: 3 spent of 8.
	got, err := h.Limiter.AllowN(ctx, "x", b, 5)
	require.NoError(t, err)
	require.True(t, got.Allowed)
	require.Zero(t, got.Remaining)
	mr, err = ml.AllowAll(ctx, []ratelimit.Request{{Key: "y", Limit: a}, {Key: "y", Limit: b}})
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	require.False(t, mr.Allowed)
}

// keepSuite returns the suite of KeepUsage rules for a limiter of alg, or none.
func keepSuite(h Harness, alg ratelimit.Algorithm) []suite {
	if !h.KeepUsage || !slices.Contains(h.algorithms(), alg) {
		return nil
	}
	return []suite{{"KeepUsage", keepRulesOf(alg), false}}
}
