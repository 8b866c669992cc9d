package distributed_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

const ms = time.Millisecond

// reserveStep is one call of a reserve timeline: after advancing by after, a Reserve of n
// within maxWait (or, with allow, a plain AllowN of n; with cancel, a Refund of the
// booking of step cancel, 1-based), and what it must answer.
type reserveStep struct {
	after   time.Duration
	n       int
	maxWait time.Duration
	allow   bool
	cancel  int
	booked  bool
	delay   time.Duration // when booked
	retry   time.Duration // when not
	err     error
}

// playReserve plays steps on one bucket of limit.
func playReserve(t *testing.T, limit ratelimit.Limit, steps []reserveStep) {
	t.Helper()
	clock := ratelimittest.NewClock()
	l := newLimiter(t, newClient(t, redistest.NewServer(t).Addr()), clock)
	ctx := context.Background()
	charges := make([]ratelimit.Charge, len(steps))
	for i, s := range steps {
		clock.Advance(s.after)
		var res ratelimit.Result
		var err error
		switch {
		case s.cancel > 0:
			_, err = l.Refund(ctx, "k", limit, 1, charges[s.cancel-1])
			require.NoError(t, err, "step %d", i+1)
			continue
		case s.allow:
			res, err = l.AllowN(ctx, "k", limit, s.n)
		default:
			res, err = l.Reserve(ctx, "k", limit, s.n, s.maxWait)
		}
		if s.err != nil {
			require.ErrorIs(t, err, s.err, "step %d", i+1)
			continue
		}
		require.NoError(t, err, "step %d", i+1)
		require.Equal(t, s.booked, res.Allowed, "step %d", i+1)
		charges[i] = res.Charge
		if s.booked {
			require.Equal(t, s.delay, res.Delay, "step %d: Delay", i+1)
			require.False(t, res.Charge.At.IsZero(), "step %d: a booking is a charge", i+1)
		} else {
			require.Equal(t, s.retry, res.RetryAfter, "step %d: RetryAfter", i+1)
		}
	}
}

// TestReserveTokenBucket: 10/s, Burst 2 (a token every 100 ms; the ceiling, Burst in debt,
// is 4 tokens short of full). Two tokens conform now; the third's slot is 100 ms on, and is
// booked only for a caller who waits that long (the boundary: 1 µs less is refused, and
// charges nothing); the fifth's, 200 ms on, brings the bucket to the ceiling, past which a
// sixth is refused with the wait it would have needed, 300 ms, as is a plain AllowN on the
// key in debt. A cancelled booking (a Refund of its charge) frees its slot for the next. A
// cost over Burst never fits. Later, 250 ms on, the bucket is 1.5 short: the next slot is
// 50 ms away.
//
// The scenarios of gubernator v2.21.0's TestScheduledAdmission* (worked example, boundary,
// ceiling, never-fits, plain requests on a key in debt) in our units: gubernator books on its
// leaky bucket only, and has no cancel; here the token bucket books too, and a slot's Delay
// is when its tokens conform, not when its place in a queue drains (TestReserveLeakyBucket).
func TestReserveTokenBucket(t *testing.T) {
	playReserve(t, ratelimit.Limit{Rate: 10, Burst: 2}, []reserveStep{
		{n: 1, booked: true},
		{n: 1, booked: true},
		{n: 1, maxWait: 100*ms - time.Microsecond, retry: 100 * ms},
		{n: 1, maxWait: 100 * ms, booked: true, delay: 100 * ms},
		{n: 1, maxWait: time.Second, booked: true, delay: 200 * ms},
		{n: 1, maxWait: time.Second, retry: 300 * ms}, // the ceiling
		{n: 1, allow: true, retry: 300 * ms},          // a plain request on the key in debt
		{cancel: 5},
		{n: 1, maxWait: time.Second, booked: true, delay: 200 * ms}, // the cancelled slot
		{n: 3, err: ratelimit.ErrExceedsBurst},
		{after: 250 * ms, n: 1, retry: 50 * ms},
		{n: 1, maxWait: 50 * ms, booked: true, delay: 50 * ms},
	})
}

// TestReserveLeakyBucket: the same limit on the leaky bucket, where a booking's Delay is its
// turn in the outflow, as AllowN's is: 0, 100 ms, then 200 ms for a caller who waits that
// long, 300 ms at the ceiling, refused past it with its turn, 400 ms.
func TestReserveLeakyBucket(t *testing.T) {
	playReserve(t, ratelimit.Limit{Rate: 10, Burst: 2, Algorithm: ratelimit.LeakyBucket}, []reserveStep{
		{n: 1, booked: true},
		{n: 1, maxWait: 100 * ms, booked: true, delay: 100 * ms},
		{n: 1, maxWait: 150 * ms, retry: 200 * ms},
		{n: 1, maxWait: time.Second, booked: true, delay: 200 * ms},
		{n: 1, maxWait: time.Second, booked: true, delay: 300 * ms},
		{n: 1, maxWait: time.Second, retry: 400 * ms},
		{n: 1, allow: true, retry: 300 * ms},
	})
}

// TestReserveNotSupported: the windows keep no timeline to book on.
func TestReserveNotSupported(t *testing.T) {
	l := newLimiter(t, newClient(t, "127.0.0.1:1"), ratelimittest.NewClock())
	for _, limit := range []ratelimit.Limit{
		{Rate: 1, Burst: 2, Algorithm: ratelimit.FixedWindow},
		{Rate: 1, Burst: 2, Warmup: time.Second},
		{Rate: 1, Burst: 2, KeepUsage: true},
	} {
		_, err := l.Reserve(context.Background(), "k", limit, 1, time.Second)
		require.ErrorIs(t, err, ratelimit.ErrNotSupported, "%v", limit)
	}
}

var _ ratelimit.Reserver = (*distributed.Limiter)(nil)

// TestWaitTokenBucket: Wait on a token bucket books its slot and sleeps until it: 10/s,
// Burst 1, three Waits return at 0, 100 ms and 200 ms; a fourth under a deadline 50 ms
// away (its slot is 100 ms on) fails at once, having booked nothing, so that the next Wait
// gets that slot.
func TestWaitTokenBucket(t *testing.T) {
	server := redistest.NewServer(t)
	prefix := uniquePrefix()
	synctest.Test(t, func(t *testing.T) {
		client := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
		defer client.Close()
		l, err := distributed.New(client, distributed.WithPrefix(prefix), distributed.WithClock(time.Now),
			distributed.WithTimeout(-1))
		require.NoError(t, err)
		ctx := context.Background()
		limit := ratelimit.Limit{Rate: 10, Burst: 1}
		start := time.Now()
		for i := range 3 {
			require.NoError(t, l.Wait(ctx, "k", limit))
			require.Equal(t, time.Duration(i)*100*ms, time.Since(start))
		}
		short, cancel := context.WithTimeout(ctx, 50*ms) // the slot is 100 ms on
		defer cancel()
		require.ErrorIs(t, l.Wait(short, "k", limit), context.DeadlineExceeded)
		require.Equal(t, 200*ms, time.Since(start), "at once")
		require.NoError(t, l.Wait(ctx, "k", limit))
		require.Equal(t, 300*ms, time.Since(start), "the slot was not taken")
	})
}

// TestReservedAtZeroUsage: the race of litellm PR #23775, five concurrent requests reading a
// usage of zero and all passing, cannot happen: an estimate is charged by the admission
// itself, in the script that decides it. 3000 tokens a minute, five requests estimating
// 1000 each at once: exactly three pass. Each then settles to 900, giving 100 back: 300 are
// left, so one more request of 300 passes and none of 301.
func TestReservedAtZeroUsage(t *testing.T) {
	client := newClient(t, redistest.NewServer(t).Addr())
	l := newLimiter(t, client, ratelimittest.NewClock())
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 50, Burst: 3000}
	results := make([]ratelimit.Result, 5)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			res, err := l.AllowN(ctx, "tpm", limit, 1000)
			require.NoError(t, err)
			results[i] = res
		})
	}
	wg.Wait()
	passed := 0
	for _, res := range results {
		if res.Allowed {
			passed++
			_, err := l.Settle(ctx, "tpm", limit, res.Charge, 1000, 900)
			require.NoError(t, err)
		}
	}
	require.Equal(t, 3, passed)
	res, err := l.Peek(ctx, "tpm", limit, 301)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	res, err = l.AllowN(ctx, "tpm", limit, 300)
	require.NoError(t, err)
	require.True(t, res.Allowed)
}

// TestReservePriority: reserve × priority reserves. 10/s, Burst 10, the default reserves (a
// Sheddable request leaves 5): after five bookings a Sheddable one's slot is a token away,
// 100 ms, where a Critical one's is now; a Sheddable request for more than the 5 it may use
// never fits. Reserve × warm-up is TestReserveNotSupported's (a warm bucket books nothing).
func TestReservePriority(t *testing.T) {
	clock := ratelimittest.NewClock()
	l := newLimiter(t, newClient(t, redistest.NewServer(t).Addr()), clock, distributed.WithReserves(priority.Reserves{}))
	ctx := context.Background()
	shed := priority.With(ctx, priority.Sheddable)
	limit := ratelimit.Limit{Rate: 10, Burst: 10}
	for range 5 {
		res, err := l.Reserve(shed, "k", limit, 1, 0)
		require.NoError(t, err)
		require.True(t, res.Allowed)
	}
	res, err := l.Reserve(shed, "k", limit, 1, 0)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	require.Equal(t, 100*ms, res.RetryAfter)
	res, err = l.Reserve(ctx, "k", limit, 1, 0)
	require.NoError(t, err)
	require.True(t, res.Allowed, "a Critical request")
	require.Equal(t, time.Duration(0), res.Delay)
	res, err = l.Reserve(shed, "k", limit, 1, time.Second)
	require.NoError(t, err)
	require.Equal(t, 200*ms, res.Delay, "now two tokens away for Sheddable")
	_, err = l.Reserve(shed, "k", limit, 6, time.Hour)
	require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
}

// TestReserveCluster: on a Redis Cluster each bucket's one key is in its own slot, and a
// booking goes to it as AllowN does: keys of every node book their second slot 100 ms on
// (10/s, Burst 1).
func TestReserveCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	l := newLimiter(t, client, ratelimittest.NewClock())
	limit := ratelimit.Limit{Rate: 10, Burst: 1}
	for i := range 12 {
		key := fmt.Sprint("user:", i)
		for _, delay := range []time.Duration{0, 100 * ms} {
			res, err := l.Reserve(context.Background(), key, limit, 1, time.Second)
			require.NoError(t, err, key)
			require.True(t, res.Allowed, key)
			require.Equal(t, delay, res.Delay, key)
		}
	}
}
