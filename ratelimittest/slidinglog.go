package ratelimittest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// slidingLogRules are the rules of ratelimit.SlidingWindowLog. The window at time u holds
// the tokens admitted after u − W (one admitted exactly W ago has left), W = Burst/Rate.
// A request for n tokens is allowed when the window holds at most Burst − n, and:
//
//	Remaining  = Burst − tokens in the window after the decision
//	RetryAfter = e_k + W − u, e_k the k-th oldest entry, k = count + n − Burst (denied)
//	ResetAfter = newest + W − u, or 0 for an empty window
var slidingLogRules = []rule{
	{"BoundaryBurst", logBoundaryBurst},
	{"OldestLeaveFirst", logOldestLeaveFirst},
	{"DenialTakesNothing", logDenialTakesNothing},
	{"AllowNIsAllOrNothing", logAllOrNothing},
	{"WindowInMicroseconds", logWindowInMicroseconds},
	{"BucketIdentity", logBucketIdentity},
	{"MaxBurst", logMaxBurst},
	{"Model", logModelRule},
}

// logBoundaryBurst is the fixed window's weak spot: Burst requests at the end of one aligned
// minute, then Burst more just after it. A fixed window admits both batches; the log admits
// none of the second until the first is a whole window old. The clock starts on a minute.
func logBoundaryBurst(t testing.TB, h harness) {
	minute := 60 * time.Second
	play(t, h, "boundary", ratelimit.PerMinute(4), []step{
		// 0:59: four requests fill the window; each is the newest, so the window empties
		// a minute later.
		{advance: 59 * time.Second, want: allowed(3, minute)},
		{want: allowed(2, minute)},
		{want: allowed(1, minute)},
		{want: allowed(0, minute)},
		// 1:00, a new aligned minute: the four from 0:59 are still in the last minute.
		// The oldest leaves at 0:59 + 60 s = 1:59, 59 s from now; so does the newest.
		{advance: time.Second, want: denied(0, 59*time.Second, 59*time.Second)},
		{advance: 58*time.Second + 999999*time.Microsecond, want: denied(0, time.Microsecond, time.Microsecond)},
		// 1:59: the first batch is exactly a window old and has left.
		{advance: time.Microsecond, want: allowed(3, minute)},
		{want: allowed(2, minute)},
		{want: allowed(1, minute)},
		{want: allowed(0, minute)},
		{want: denied(0, minute, minute)},
	})
}

// logOldestLeaveFirst: entries leave in the order they came, and a request for n tokens
// waits for the k-th oldest. Rate 1/s, Burst 3: W = 3 s.
func logOldestLeaveFirst(t testing.TB, h harness) {
	play(t, h, "oldest", ratelimit.Limit{Rate: 1, Burst: 3}, []step{
		{want: allowed(2, 3*time.Second)},                       // t = 0
		{advance: time.Second, want: allowed(1, 3*time.Second)}, // t = 1
		{advance: time.Second, want: allowed(0, 3*time.Second)}, // t = 2
		// t = 2.5: the entry of t = 0 leaves at 3; the newest (2) at 5.
		{advance: 500 * ms, want: denied(0, 500*ms, 2500*ms)},
		// Two tokens need the two oldest gone: the second, from t = 1, leaves at 4.
		{n: 2, want: denied(0, 1500*ms, 2500*ms)},
		{n: 3, want: denied(0, 2500*ms, 2500*ms)},
		// t = 3: the entry of t = 0 has left; two remain (1 and 2), one token of room.
		// Two tokens wait for the entry of t = 1, a second away.
		{advance: 500 * ms, n: 2, want: denied(1, time.Second, 2*time.Second)},
		{want: allowed(0, 3*time.Second)},
		// t = 4: the entry of t = 1 has left.
		{advance: time.Second, want: allowed(0, 3*time.Second)},
		// Entries at 2, 3, 4: the oldest leaves at 5.
		{want: denied(0, time.Second, 3*time.Second)},
	})
}

// logDenialTakesNothing: denials add no entry. Unlike a token bucket, the log gives nothing
// back until an entry leaves: 100 ms after the burst it still holds all three.
func logDenialTakesNothing(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 10, Burst: 3} // W = 300 ms
	steps := []step{
		{want: allowed(2, 300*ms)},
		{want: allowed(1, 300*ms)},
		{want: allowed(0, 300*ms)},
	}
	for range 10 {
		steps = append(steps, step{want: denied(0, 300*ms, 300*ms)})
	}
	steps = append(steps,
		step{advance: 100 * ms, want: denied(0, 200*ms, 200*ms)},
		// t = 300 ms: the three entries of t = 0 have left together.
		step{advance: 200 * ms, want: allowed(2, 300*ms)},
	)
	play(t, h, "deny", limit, steps)
}

// logAllOrNothing: a request for more tokens than the window has room for adds none.
func logAllOrNothing(t testing.TB, h harness) {
	play(t, h, "cost", ratelimit.Limit{Rate: 1, Burst: 5}, []step{ // W = 5 s
		{n: 3, want: allowed(2, 5*time.Second)},
		// Room for 2, 3 asked: the oldest entry (t = 0) must leave, at 5 s.
		{n: 3, want: denied(2, 5*time.Second, 5*time.Second)},
		{n: 2, want: allowed(0, 5*time.Second)},
		{advance: 2 * time.Second, want: denied(0, 3*time.Second, 3*time.Second)},
		// t = 5: all five entries of t = 0 leave at once.
		{advance: 3 * time.Second, n: 5, want: allowed(0, 5*time.Second)},
	})
}

// logWindowInMicroseconds: W = Burst/Rate rounded to the microsecond, the same integer on
// every backend. At 3/s with a burst of 1, W = 333,333 µs.
func logWindowInMicroseconds(t testing.TB, h harness) {
	w := 333333 * time.Microsecond
	play(t, h, "micro", ratelimit.Limit{Rate: 3, Burst: 1}, []step{
		{want: allowed(0, w)},
		{want: denied(0, w, w)},
		{advance: w - time.Microsecond, want: denied(0, time.Microsecond, time.Microsecond)},
		{advance: time.Microsecond, want: allowed(0, w)},
	})
}

// logBucketIdentity: a bucket is (key, Rate, Burst); changing any of them is another bucket.
func logBucketIdentity(t testing.TB, h harness) {
	one := ratelimit.Limit{Rate: 1, Burst: 1}
	play(t, h, "id", one, []step{
		{want: allowed(0, time.Second)},
		{want: denied(0, time.Second, time.Second)},
	})
	play(t, h, "id", ratelimit.Limit{Rate: 1, Burst: 2}, []step{{want: allowed(1, 2*time.Second)}})
	play(t, h, "id", ratelimit.Limit{Rate: 2, Burst: 1}, []step{{want: allowed(0, 500*ms)}})
	play(t, h, "id2", one, []step{{want: allowed(0, time.Second)}})
	play(t, h, "id", one, []step{{want: denied(0, time.Second, time.Second)}})
}

// logMaxBurst: the log holds up to args.MaxLogBurst entries; a larger Burst is an
// invalid limit, with the same message on every backend, and so is a window that does not
// fit in 2^53 µs.
func logMaxBurst(t testing.TB, h harness) {
	ctx := context.Background()
	largest := ratelimit.Limit{Rate: args.MaxLogBurst, Burst: args.MaxLogBurst} // W = 1 s
	play(t, h, "max", largest, []step{
		{n: args.MaxLogBurst, want: allowed(0, time.Second)},
		{want: denied(0, time.Second, time.Second)},
		{advance: time.Second, want: allowed(args.MaxLogBurst-1, time.Second)},
	})

	tooLarge := ratelimit.Limit{Rate: 1, Burst: args.MaxLogBurst + 1}
	res, err := h.Limiter.Allow(ctx, "max", tooLarge)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	require.EqualError(t, err, "ratelimit: invalid limit: burst 10001 is above the sliding window log's maximum of 10000")
	require.Equal(t, ratelimit.Result{Limit: tooLarge}, res)

	tooLong := ratelimit.Limit{Rate: 1e-6, Burst: 9008} // W = 9008·10¹² µs > 2^53
	_, err = h.Limiter.Allow(ctx, "max", tooLong)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
}

// logModelRule plays a long random timeline against the reference model.
func logModelRule(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 5, Burst: 8} // W = 1.6 s
	checkSlidingLog(t, h, limit, randomOps(1, 300, 400*ms, 3))
}
