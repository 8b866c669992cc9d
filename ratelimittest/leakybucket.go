package ratelimittest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// leakyBucketRules are the rules of ratelimit.LeakyBucket, a shaper: a queue of Burst places
// drained at exactly Rate. It is GCRA's virtual schedule, so it decides exactly as the token
// bucket does: the token bucket's tables hold unchanged, each with the Delay of every
// request added. With T = 1/Rate and the queue's end TAT, a request at u starts at
// S = max(TAT, u) and waits Delay = S − u: the k-th of a burst at once waits k·T.
var leakyBucketRules = []rule{
	{"WorkedExample", withDelays(workedExample, 0, time.Second, 0, 600*ms)},
	{"RetryAfterIsExact", withDelays(retryAfterIsExact, 0, time.Second, 0, 0, time.Second, 0, 0, time.Second)},
	{"DenialTakesNothing", withDelays(denialTakesNothing, 0, 100*ms, 200*ms, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 200*ms, 0)},
	{"AllowNIsAllOrNothing", withDelays(allowNIsAllOrNothing, 0, 0, 3*time.Second, 0, 3*time.Second, 0)},
	{"RefillStopsAtBurst", withDelays(refillStopsAtBurst, 0, 0, 10*ms, 0)},
	{"ResetAfter", withDelays(resetAfter, 0, 500*ms, 750*ms, 0)},
	{"BucketIdentity", withDelays(bucketIdentity, 0, 0, 0, 0, 0, 0)},
	{"Invariants", leakyInvariants},
	{"Spacing", leakySpacing},
	{"Model", leakyModelRule},
}

// The token bucket's tables, with the Delays of their requests in order (0 for a denial):
//
//   - WorkedExample (T = 1 s): A at 0.1 s finds the queue empty; B starts when A is done, at
//     1.1 s; D at 1.5 s starts at the TAT, 2.1 s: 0.6 s.
//   - RetryAfterIsExact (T = 1 s): each request allowed after a denial finds the queue a
//     second from empty, since the denial's RetryAfter is when the queue has room again.
//   - DenialTakesNothing (T = 100 ms): 0, T, 2T; at 100 ms the queue ends at 300 ms.
//   - AllowNIsAllOrNothing (T = 1 s): 3 tokens at 0 end at 3 s; 2 more start at 3 s; at 2 s
//     the queue ends at 5 s, 3 s away; at 7 s it is empty.
//   - RefillStopsAtBurst (T = 10 ms): an hour later the queue is empty, then one is queued.
//   - ResetAfter (T = 500 ms): 0, T; at 250 ms the queue ends at 1 s; at 1.5 s it is empty.
//   - BucketIdentity: each bucket's first request finds its queue empty.

// withDelays runs a token bucket rule on a LeakyBucket harness, requiring the k-th decision
// to carry Delay delays[k] and then clearing it, so that the rule's own table, which
// expects no Delay, checks the rest.
func withDelays(r func(testing.TB, harness), delays ...time.Duration) func(testing.TB, harness) {
	return func(t testing.TB, h harness) {
		d := &delayCheck{Limiter: h.Limiter, check: func(i, _ int, res ratelimit.Result) {
			require.Less(t, i, len(delays), "more decisions than Delays listed")
			require.Equal(t, delays[i], res.Delay, "Delay of decision %d", i)
		}}
		h.Limiter = d
		r(t, h)
		require.Equal(t, len(delays), d.calls, "fewer decisions than Delays listed")
	}
}

// delayCheck is a Limiter that shows every successful decision to check (its index, the
// cost, the Result) and then clears the Result's Delay.
type delayCheck struct {
	ratelimit.Limiter
	check func(i, n int, res ratelimit.Result)
	calls int
}

func (d *delayCheck) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return d.AllowN(ctx, key, limit, 1)
}

func (d *delayCheck) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	res, err := d.Limiter.AllowN(ctx, key, limit, n)
	if err == nil {
		d.check(d.calls, n, res)
		d.calls++
		res.Delay = 0
	}
	return res, err
}

// leakyInvariants runs the token bucket's invariants and checks every Delay: zero for a
// denial, and for an allowed request of n tokens exactly n·T less than ResetAfter (the
// queue ends n·T after the request starts). Rate 5/s: T = 200 ms; the durations leave as
// whole microseconds rounded on their own, hence 1 µs of slack.
func leakyInvariants(t testing.TB, h harness) {
	h.Limiter = &delayCheck{Limiter: h.Limiter, check: func(i, n int, res ratelimit.Result) {
		if !res.Allowed {
			require.Zero(t, res.Delay, "decision %d", i)
			return
		}
		require.GreaterOrEqual(t, res.Delay, time.Duration(0), "decision %d", i)
		require.InDelta(t, time.Duration(n)*200*ms, res.ResetAfter-res.Delay, float64(time.Microsecond),
			"decision %d: %+v", i, res)
	}}
	invariants(t, h)
}

// queued is an allowed Result with a Delay.
func queued(remaining int, resetAfter, delay time.Duration) ratelimit.Result {
	return ratelimit.Result{Allowed: true, Remaining: remaining, ResetAfter: resetAfter, Delay: delay}
}

// leakySpacing: Rate 10/s (T = 100 ms), Burst 5. Requests leave evenly spaced by T however
// they arrive; Remaining counts the free places; ResetAfter is when the queue is empty.
func leakySpacing(t testing.TB, h harness) {
	play(t, h, "spacing", ratelimit.Limit{Rate: 10, Burst: 5}, []step{
		// Five at once leave at 0, 100, 200, 300 and 400 ms.
		{want: queued(4, 100*ms, 0)},
		{want: queued(3, 200*ms, 100*ms)},
		{want: queued(2, 300*ms, 200*ms)},
		{want: queued(1, 400*ms, 300*ms)},
		{want: queued(0, 500*ms, 400*ms)},
		// Full: the first place frees up when the first request is done, in T.
		{want: denied(0, 100*ms, 500*ms)},
		// 100 ms: one place free; its turn is at 500 ms, 400 ms away.
		{advance: 100 * ms, want: queued(0, 500*ms, 400*ms)},
		// 350 ms: the queue ends at 600 ms: 2.5 places taken, 2 whole ones free.
		{advance: 250 * ms, want: queued(1, 350*ms, 250*ms)},
		// The queue ends at 700 ms, 3.5 places: room for 1.5. Two tokens fit when the queue
		// end is 3 places away, at 400 ms.
		{n: 2, want: denied(1, 50*ms, 350*ms)},
		{advance: 50 * ms, n: 2, want: queued(0, 500*ms, 300*ms)},
		// 1.4 s: the queue emptied at 900 ms; a request leaves at once.
		{advance: time.Second, want: queued(4, 100*ms, 0)},
	})
}

// leakyModelRule plays random timelines against the reference model: T = 1024 µs, where
// the backends' token arithmetic is exact, and T = 1/3 s, where it is not.
func leakyModelRule(t testing.TB, h harness) {
	checkLeakyBucket(t, h, ratelimit.Limit{Rate: 1e6 / 1024, Burst: 6}, randomOps(2, 250, 3*ms, 3))
	checkLeakyBucket(t, h, ratelimit.Limit{Rate: 3, Burst: 4}, randomOps(3, 250, 500*ms, 2))
}
