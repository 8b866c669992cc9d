package distributed_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// newClient returns a client of server that honours context deadlines, closed at cleanup.
func newClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// prefixes hands out a key prefix per limiter, so that limiters sharing a server never
// share a bucket.
var prefixes atomic.Int64

func uniquePrefix() string {
	return fmt.Sprintf("test%d:", prefixes.Add(1))
}

// newLimiter returns a limiter on client whose script reads clock instead of Redis TIME.
func newLimiter(t testing.TB, client redis.Scripter, clock *ratelimittest.Clock, opts ...distributed.Option) *distributed.Limiter {
	opts = append([]distributed.Option{
		distributed.WithPrefix(uniquePrefix()),
		distributed.WithClock(clock.Now),
		// A loaded 2-core machine running -race can stall far beyond the default.
		distributed.WithTimeout(10 * time.Second),
	}, opts...)
	l, err := distributed.New(client, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// redisHarness describes to ratelimittest the limiters on client built with opts (each
// called afresh, for a prefix of its own) after the test ones, on a clock of their own that
// the script reads in place of Redis TIME.
func redisHarness(client redis.Scripter, opts func() []distributed.Option) ratelimittest.Harness {
	return ratelimittest.Harness{
		New: func(t testing.TB, c ratelimittest.Config) ratelimit.Limiter {
			return newLimiter(t, client, c.Clock, append(opts(),
				distributed.WithAlgorithm(c.Algorithm), distributed.WithReserves(c.Reserves))...)
		},
		Reserves:  true,
		Warmup:    true,
		Quotas:    true,
		KeepUsage: true,
	}
}

func noOptions() []distributed.Option { return nil }

// runConformance runs every rule of the contract on client.
func runConformance(t *testing.T, client redis.Scripter) {
	ratelimittest.Run(t, redisHarness(client, noOptions))
}

func TestConformance(t *testing.T) {
	t.Parallel()
	server := redistest.NewServer(t)
	runConformance(t, newClient(t, server.Addr()))
}

// TestConformanceGuarded runs the suite on a client that ignores context deadlines, where
// the limiter waits for replies in goroutines of its own.
func TestConformanceGuarded(t *testing.T) {
	t.Parallel()
	server := redistest.NewServer(t)
	client := redis.NewClient(&redis.Options{Addr: server.Addr()})
	t.Cleanup(func() { _ = client.Close() })
	runConformance(t, client)
}

func TestConformanceRing(t *testing.T) {
	t.Parallel()
	server := redistest.NewServer(t)
	ring := redis.NewRing(&redis.RingOptions{
		Addrs:                 map[string]string{"one": server.Addr()},
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = ring.Close() })
	runConformance(t, ring)
}

func TestConformanceCluster(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t)
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 cluster.Addrs(),
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = client.Close() })
	runConformance(t, client)
}

// TestKeyLayout pins what a bucket looks like in Redis: its name and its value, the TAT
// counted in tokens since 2020-01-01. TestRedisClock checks its expiry.
func TestKeyLayout(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock() // 2026-01-01, 2192 days after 2020-01-01
	l, err := distributed.New(newClient(t, server.Addr()), distributed.WithClock(clock.Now), distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)

	res, err := l.Allow(context.Background(), "user:42", ratelimit.Limit{Rate: 10, Burst: 20})
	require.NoError(t, err)
	require.True(t, res.Allowed)

	const key = "ratelimit:user:42:tb:10:20"
	// 2192 days × 86,400 s × 10 tokens/s = 1,893,888,000 tokens, plus the one just taken.
	got, err := server.Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, "1893888001", got)
	// A denial writes nothing.
	for range 19 {
		_, err = l.Allow(context.Background(), "user:42", ratelimit.Limit{Rate: 10, Burst: 20})
		require.NoError(t, err)
	}
	res, err = l.Allow(context.Background(), "user:42", ratelimit.Limit{Rate: 10, Burst: 20})
	require.NoError(t, err)
	require.False(t, res.Allowed)
	got, err = server.Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, "1893888020", got)
}

// TestRedisClock runs without a test clock: the script reads Redis TIME.
func TestRedisClock(t *testing.T) {
	server := redistest.NewServer(t)
	prefix := uniquePrefix()
	l, err := distributed.New(newClient(t, server.Addr()), distributed.WithPrefix(prefix),
		distributed.WithTimeout(10*time.Second)) // a loaded 2-core machine under -race
	require.NoError(t, err)
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 2} // a token an hour: no refill here

	before := time.Now()
	first, err := l.Allow(ctx, "k", limit)
	require.NoError(t, err)
	// The charge is the instant Redis read, on its own clock: this machine's, here.
	assert.WithinRange(t, first.Charge.At, before.Add(-time.Second), time.Now().Add(time.Second))
	first.Charge = ratelimit.Charge{}
	assert.Equal(t, ratelimit.Result{Allowed: true, Limit: limit, Remaining: 1, ResetAfter: time.Hour}, first)
	second, err := l.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.True(t, second.Allowed)
	assert.Equal(t, 0, second.Remaining)
	// A little time has passed on the Redis clock since the first call.
	assert.InDelta(t, 2*time.Hour, second.ResetAfter, float64(time.Second))
	third, err := l.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.False(t, third.Allowed)
	assert.InDelta(t, time.Hour, third.RetryAfter, float64(time.Second))

	// The key expires when the bucket would be full again: in two hours, in milliseconds.
	ttl, err := server.Do("PTTL", prefix+"k:tb:0.0002777777777777778:2")
	require.NoError(t, err)
	assert.InDelta(t, 2*3600*1000, ttl, 1000)
}

func TestNewDoesNotContactRedis(t *testing.T) {
	conns := blackhole(t)
	client := redis.NewClient(&redis.Options{Addr: conns.addr})
	t.Cleanup(func() { _ = client.Close() })
	_, err := distributed.New(client)
	require.NoError(t, err)
	assert.Zero(t, conns.accepted.Load())
}

// TestNewNilClient: a nil client, typed or not, is refused with the same error, not a panic.
func TestNewNilClient(t *testing.T) {
	clients := map[string]redis.Scripter{
		"untyped":                 nil,
		"*redis.Client":           (*redis.Client)(nil),
		"*redis.ClusterClient":    (*redis.ClusterClient)(nil),
		"*redis.Ring":             (*redis.Ring)(nil),
		"UniversalClient(Client)": redis.UniversalClient((*redis.Client)(nil)),
	}
	for name, client := range clients {
		t.Run(name, func(t *testing.T) {
			l, err := distributed.New(client)
			require.EqualError(t, err, "distributed: New: nil client")
			require.Nil(t, l)
		})
	}
}

func TestCloseLeavesClientOpen(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	l, err := distributed.New(client)
	require.NoError(t, err)
	require.NoError(t, l.Close())
	require.NoError(t, client.Ping(context.Background()).Err())
}

func TestWaitNotSupported(t *testing.T) {
	l, err := distributed.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	require.NoError(t, err)
	err = l.Wait(context.Background(), "k", ratelimit.Limit{Rate: 1, Burst: 1, Algorithm: ratelimit.SlidingWindowCounter})
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
}

// An algorithm that is none of the constants is refused at construction, as on the local
// backend; CalendarQuota as the default decides only the limits that name an algorithm.
func TestAlgorithmNotSupported(t *testing.T) {
	_, err := distributed.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}),
		distributed.WithAlgorithm(ratelimit.Algorithm(99)))
	require.EqualError(t, err, "distributed: New: WithAlgorithm(Algorithm(99)): not one of the ratelimit package's algorithms")
	l, err := distributed.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}),
		distributed.WithAlgorithm(ratelimit.CalendarQuota))
	require.NoError(t, err)
	_, err = l.Allow(context.Background(), "k", ratelimit.PerSecond(1))
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
}
