package distributed_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// holdLimits are a limit of 3000 tokens per algorithm: 3000 a minute (Rate 50/s) on the
// buckets and windows (a window of 60 s from the test clock's minute), 3000 a month on the
// quota. The test clock starts on a month's, and a minute's, first instant.
var holdLimits = []struct {
	name  string
	limit ratelimit.Limit
}{
	{"TokenBucket", ratelimit.Limit{Rate: 50, Burst: 3000}},
	{"LeakyBucket", ratelimit.Limit{Rate: 50, Burst: 3000, Algorithm: ratelimit.LeakyBucket}},
	{"FixedWindow", ratelimit.Limit{Rate: 50, Burst: 3000, Algorithm: ratelimit.FixedWindow}},
	{"SlidingWindowLog", ratelimit.Limit{Rate: 50, Burst: 3000, Algorithm: ratelimit.SlidingWindowLog}},
	{"SlidingWindowCounter", ratelimit.Limit{Rate: 50, Burst: 3000, Algorithm: ratelimit.SlidingWindowCounter}},
	{"CalendarQuota", ratelimit.Quota(3000, ratelimit.Period{Unit: ratelimit.Month, Zone: "UTC"})},
	{"KeepUsage", ratelimit.Limit{Rate: 50, Burst: 3000, Algorithm: ratelimit.FixedWindow, KeepUsage: true}},
	{"Warmup", ratelimit.Limit{Rate: 50, Burst: 3000, Warmup: time.Minute}},
}

// TestHoldAtZeroUsage: the litellm race with holds. Five callers hold an estimate of 1000
// tokens at once on an unused limit of 3000: on every algorithm exactly three pass, the
// holds in flight counted by each admission. (A warm-up's cold bucket admits less: its
// rate climbs from a third.)
func TestHoldAtZeroUsage(t *testing.T) {
	server := redistest.NewServer(t)
	for _, c := range holdLimits {
		t.Run(c.name, func(t *testing.T) {
			l := newLimiter(t, newClient(t, server.Addr()), ratelimittest.NewClock())
			var wg sync.WaitGroup
			var mu sync.Mutex
			passed := 0
			for range 5 {
				wg.Go(func() {
					res, err := l.Hold(context.Background(), "tpm", c.limit, 1000, 30*time.Second)
					require.NoError(t, err)
					if res.Allowed {
						mu.Lock()
						passed++
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			want := 3
			if c.limit.Warmup != 0 {
				want = 1 // a cold bucket holds Burst/3 = 1000 tokens
			}
			require.Equal(t, want, passed)
		})
	}
}

// TestHoldExpires: three holds of 1000 of 3000, TTL 10 s, whose holders crash. 1 µs before
// the TTL a fourth hold is refused (the token bucket has refilled 10 s · 50 = 500 only); at
// the TTL a plain Peek still counts the expired holds, and the next hold gives all three
// back and passes, leaving 2000. The windows' holds come back to the window they charged,
// which is still the current one.
func TestHoldExpires(t *testing.T) {
	server := redistest.NewServer(t)
	ctx := context.Background()
	const ttl = 10 * time.Second
	for _, c := range holdLimits {
		if c.limit.Warmup != 0 {
			continue // TestHoldAtZeroUsage: a cold bucket holds one
		}
		t.Run(c.name, func(t *testing.T) {
			clock := ratelimittest.NewClock()
			l := newLimiter(t, newClient(t, server.Addr()), clock)
			for i := range 3 {
				res, err := l.Hold(ctx, "tpm", c.limit, 1000, ttl)
				require.NoError(t, err)
				require.True(t, res.Allowed, "hold %d", i+1)
			}
			clock.Advance(ttl - time.Microsecond)
			res, err := l.Hold(ctx, "tpm", c.limit, 1000, ttl)
			require.NoError(t, err)
			require.False(t, res.Allowed, "the holds in flight")
			clock.Advance(time.Microsecond)
			res, err = l.Peek(ctx, "tpm", c.limit, 1000)
			require.NoError(t, err)
			require.False(t, res.Allowed, "a Peek counts the expired holds until a hold runs")
			res, err = l.Hold(ctx, "tpm", c.limit, 1000, ttl)
			require.NoError(t, err)
			require.True(t, res.Allowed, "the crashed holders' tokens are back")
			require.Equal(t, 2000, res.Remaining)
		})
	}
}

// TestHoldSettle: a hold settles as a plain decision does, and its record goes with it. On
// one bucket by holds, on a twin by AllowN and Settle, each step answers alike: an underrun
// (4 held, 1 spent), a Refund of 2 of 5 held, an overrun on the token bucket, with KeepUsage
// too (2 held, 8 spent: 2 in debt); then, past the TTL, the holds settled give nothing more back,
// so a hold and an AllowN still answer alike.
func TestHoldSettle(t *testing.T) {
	server := redistest.NewServer(t)
	ctx := context.Background()
	const ttl = time.Second
	limits := map[string]ratelimit.Limit{
		"TokenBucket": {Rate: 1, Burst: 10},
		"KeepUsage":   {Rate: 1, Burst: 10, KeepUsage: true},
		"FixedWindow": {Rate: 1, Burst: 10, Algorithm: ratelimit.FixedWindow},
		"Quota":       ratelimit.Quota(10, ratelimit.Period{Unit: ratelimit.Day, Zone: "UTC"}),
	}
	for name, limit := range limits {
		t.Run(name, func(t *testing.T) {
			clock := ratelimittest.NewClock()
			l := newLimiter(t, newClient(t, server.Addr()), clock)
			same := func(held, twin ratelimit.Result, step string) {
				t.Helper()
				held.Charge, twin.Charge = ratelimit.Charge{}, ratelimit.Charge{}
				require.Equal(t, twin, held, step)
			}
			decide := func(n int) (h, p ratelimit.Result) {
				t.Helper()
				h, err := l.Hold(ctx, "held", limit, n, ttl)
				require.NoError(t, err)
				p, err = l.AllowN(ctx, "twin", limit, n)
				require.NoError(t, err)
				same(h, p, fmt.Sprint("decide ", n))
				return h, p
			}
			settle := func(h, p ratelimit.Result, reserved, actual int) {
				t.Helper()
				hs, err := l.Settle(ctx, "held", limit, h.Charge, reserved, actual)
				require.NoError(t, err)
				ps, err := l.Settle(ctx, "twin", limit, p.Charge, reserved, actual)
				require.NoError(t, err)
				same(hs, ps, fmt.Sprint("settle ", reserved, " to ", actual))
			}
			h, p := decide(4)
			settle(h, p, 4, 1)
			h, p = decide(5)
			hr, err := l.Refund(ctx, "held", limit, 2, h.Charge)
			require.NoError(t, err)
			pr, err := l.Refund(ctx, "twin", limit, 2, p.Charge)
			require.NoError(t, err)
			same(hr, pr, "refund 2 of 5")
			if name == "TokenBucket" || name == "KeepUsage" {
				h, p = decide(2)
				settle(h, p, 2, 8)
			}
			clock.Advance(ttl)
			decide(1)
		})
	}
}

// TestHoldSettledLate: Rate 1/s, Burst 10, TTL 1 s. A hold of 5 settled to 3 after its TTL
// was given back when it expired: the token bucket is charged the whole 3, and answers as a
// peek for one token, 4 short of full (ResetAfter 4 s; settled in time, 4 − 2 + 1 = 3 s).
// A fixed window keeps no debt:
// the late settle of 3 is refused, of 0 changes nothing; a Refund of an expired hold gives
// nothing.
func TestHoldSettledLate(t *testing.T) {
	ctx := context.Background()
	clock := ratelimittest.NewClock()
	l := newLimiter(t, newClient(t, redistest.NewServer(t).Addr()), clock)
	tb := ratelimit.Limit{Rate: 1, Burst: 10}
	h, err := l.Hold(ctx, "k", tb, 5, time.Second)
	require.NoError(t, err)
	clock.Advance(time.Second)
	res, err := l.Settle(ctx, "k", tb, h.Charge, 5, 3)
	require.NoError(t, err)
	require.Equal(t, 4*time.Second, res.ResetAfter)

	fw := ratelimit.Limit{Rate: 1, Burst: 10, Algorithm: ratelimit.FixedWindow}
	h, err = l.Hold(ctx, "k", fw, 5, time.Second)
	require.NoError(t, err)
	clock.Advance(time.Second)
	_, err = l.Settle(ctx, "k", fw, h.Charge, 5, 3)
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	res, err = l.Settle(ctx, "k", fw, h.Charge, 5, 0)
	require.NoError(t, err)
	require.Equal(t, 9, res.Remaining, "the window is empty again: a peek for one leaves 9")
	_, err = l.Refund(ctx, "k", fw, 5, h.Charge)
	require.NoError(t, err)
	res, err = l.AllowN(ctx, "k", fw, 10)
	require.NoError(t, err)
	require.True(t, res.Allowed, "nothing given back twice: the window holds 10")
	res, err = l.Refund(ctx, "k", fw, 5, h.Charge)
	require.NoError(t, err)
	require.Equal(t, 0, res.Remaining, "a Refund of the expired hold gives nothing")
}

// TestHoldInvalid: a TTL under 1 µs, and a charge that names no hold of that many tokens,
// are refused; so is an overrun of a live hold on a fixed window, which keeps the hold.
func TestHoldInvalid(t *testing.T) {
	ctx := context.Background()
	l := newLimiter(t, newClient(t, redistest.NewServer(t).Addr()), ratelimittest.NewClock())
	limit := ratelimit.Limit{Rate: 1, Burst: 10, Algorithm: ratelimit.FixedWindow}
	_, err := l.Hold(ctx, "k", limit, 1, 0)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	h, err := l.Hold(ctx, "k", limit, 4, time.Minute)
	require.NoError(t, err)
	_, err = l.Settle(ctx, "k", limit, h.Charge, 3, 3)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	_, err = l.Settle(ctx, "k", limit, h.Charge, 4, 5)
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	res, err := l.Settle(ctx, "k", limit, h.Charge, 4, 0)
	require.NoError(t, err)
	require.Equal(t, 9, res.Remaining, "the refused overrun left the hold to settle")
}

// TestHoldCluster: on a Redis Cluster a bucket and its holds share a slot, whatever braces
// the key holds (a hash tag, none, a stray "}"), so holds expire and settle there too.
func TestHoldCluster(t *testing.T) {
	cluster := redistest.NewCluster(t)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	clock := ratelimittest.NewClock()
	l := newLimiter(t, client, clock)
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1, Burst: 2, Algorithm: ratelimit.FixedWindow}
	for _, key := range []string{"user:1", "{user:2}:tpm", "user:3}", "a{}b}c", "user:5"} {
		for range 2 {
			res, err := l.Hold(ctx, key, limit, 1, time.Second)
			require.NoError(t, err, key)
			require.True(t, res.Allowed, key)
		}
	}
	clock.Advance(time.Second)
	for _, key := range []string{"user:1", "{user:2}:tpm", "user:3}", "a{}b}c", "user:5"} {
		res, err := l.Hold(ctx, key, limit, 2, time.Second)
		require.NoError(t, err, key)
		require.True(t, res.Allowed, "%s: both holds back", key)
	}
}

// TestHoldReset: Reset forgets a bucket's holds with the bucket. A fixed window of 3000 a
// minute holds 1000 for 10 s, is reset, then spent whole by AllowN; at the hold's expiry a
// new hold is refused: the reset hold is not given back a second time (it was, by the
// reset).
func TestHoldReset(t *testing.T) {
	ctx := context.Background()
	clock := ratelimittest.NewClock()
	l := newLimiter(t, newClient(t, redistest.NewServer(t).Addr()), clock)
	limit := ratelimit.Limit{Rate: 50, Burst: 3000, Algorithm: ratelimit.FixedWindow}
	res, err := l.Hold(ctx, "k", limit, 1000, 10*time.Second)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.NoError(t, l.Reset(ctx, "k", limit))
	res, err = l.AllowN(ctx, "k", limit, 3000)
	require.NoError(t, err)
	require.True(t, res.Allowed, "the reset bucket is full")
	clock.Advance(10 * time.Second)
	res, err = l.Hold(ctx, "k", limit, 1000, 10*time.Second)
	require.NoError(t, err)
	require.False(t, res.Allowed, "the window holds 3000: no hold left to give back")
	require.Equal(t, 0, res.Remaining)
}
