package distributed_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// admission is one allowed request of a contention test.
type admission struct {
	n   int
	res ratelimit.Result
}

// contend runs 64 goroutines of 8 requests each, costing 3, 2, then 1 token six times, on
// one bucket whose clock stands still, and returns the admitted ones. Deciding is all or
// nothing, so exactly Burst tokens are admitted: were fewer, a place would be left, and
// every one of the 384 single-token requests would have been admitted.
func contend(t *testing.T, l ratelimit.Limiter, limit ratelimit.Limit) []admission {
	var mu sync.Mutex
	var got []admission
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for _, n := range []int{3, 2, 1, 1, 1, 1, 1, 1} {
				res, err := l.AllowN(context.Background(), "hot", limit, n)
				if !assert.NoError(t, err) {
					return
				}
				if res.Allowed {
					mu.Lock()
					got = append(got, admission{n, res})
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return got
}

// clients returns a single-node client and a Cluster client, each on servers of its own.
func clients(t *testing.T) map[string]redis.Scripter {
	cluster := redistest.NewCluster(t)
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cc.Close() })
	return map[string]redis.Scripter{"Node": newClient(t, redistest.NewServer(t).Addr()), "Cluster": cc}
}

// TestContention: under 64-way contention both algorithms admit exactly Burst tokens, each
// request sees the window or queue as the ones before it left it, and the leaky bucket's
// Delays tile its queue: each admitted request starts when the one before it ends, from 0
// to Burst·T.
func TestContention(t *testing.T) {
	t.Parallel()
	limit := ratelimit.Limit{Rate: 1, Burst: 100} // T = 1 s, W = 100 s
	for name, client := range clients(t) {
		t.Run(name, func(t *testing.T) {
			for _, alg := range []ratelimit.Algorithm{ratelimit.SlidingWindowLog, ratelimit.LeakyBucket} {
				t.Run(alg.String(), func(t *testing.T) {
					l := newLimiter(t, client, ratelimittest.NewClock(), distributed.WithAlgorithm(alg))
					got := contend(t, l, limit)
					// In the order they were decided, Remaining falls by each one's cost.
					slices.SortFunc(got, func(a, b admission) int { return b.res.Remaining - a.res.Remaining })
					taken := 0
					for _, a := range got {
						if alg == ratelimit.LeakyBucket {
							require.Equal(t, time.Duration(taken)*time.Second, a.res.Delay, "%+v", a)
						}
						taken += a.n
						require.Equal(t, limit.Burst-taken, a.res.Remaining, "%+v", a)
					}
					require.Equal(t, limit.Burst, taken)
				})
			}
		})
	}
}

// TestSlidingLogKeyLayout pins what a log looks like in Redis: a sorted set with a member
// per token, "<µs since 2020>:<position>", scored with its time; the key lives as long as
// the window (with the test clock, at least an hour). A denial writes nothing.
func TestSlidingLogKeyLayout(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock() // 2026-01-01: 2192 days = 189,388,800 s after 2020-01-01
	l, err := distributed.New(newClient(t, server.Addr()), distributed.WithClock(clock.Now),
		distributed.WithAlgorithm(ratelimit.SlidingWindowLog))
	require.NoError(t, err)
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 2, Burst: 3} // W = 1.5 s
	res, err := l.AllowN(ctx, "user:42", limit, 2)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	clock.Advance(time.Microsecond)
	res, err = l.Allow(ctx, "user:42", limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	res, err = l.Allow(ctx, "user:42", limit)
	require.NoError(t, err)
	require.False(t, res.Allowed)

	const key = "ratelimit:user:42:swl:2:3"
	got, err := server.Do("ZRANGE", key, "0", "-1", "WITHSCORES")
	require.NoError(t, err)
	assert.Equal(t, []any{
		"189388800000000:1", "189388800000000",
		"189388800000000:2", "189388800000000",
		"189388800000001:3", "189388800000001",
	}, got)
	ttl, err := server.Do("PTTL", key)
	require.NoError(t, err)
	assert.InDelta(t, 1500+3600000, ttl, 1000, "the window of 1.5 s, and the test clock's hour")
}

// TestSlidingLogClockStepsBack: if Redis TIME steps back, a new entry's name can already be
// taken; the script names it further on instead of overwriting the entry, so the window
// still counts every token.
func TestSlidingLogClockStepsBack(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock()
	l := newLimiter(t, newClient(t, server.Addr()), clock, distributed.WithAlgorithm(ratelimit.SlidingWindowLog))
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1, Burst: 3} // W = 3 s
	allow := func(n int) ratelimit.Result {
		res, err := l.AllowN(ctx, "k", limit, n)
		require.NoError(t, err)
		return res
	}
	require.True(t, allow(2).Allowed) // at 0 s: "0:1", "0:2"
	clock.Advance(time.Second)
	require.True(t, allow(1).Allowed) // at 1 s: "1:3"
	clock.Advance(2 * time.Second)
	// At 3 s the entries of 0 s have left; this admission adds "3:2" and trims them.
	require.True(t, allow(1).Allowed)
	// Back to 1 s: the window holds "1:3" and, from the "future", "3:2", so the next entry
	// is position 3, at 1 s: "1:3", which exists.
	clock.Advance(-2 * time.Second)
	res := allow(1)
	require.True(t, res.Allowed)
	assert.Equal(t, 0, res.Remaining)
	assert.False(t, allow(1).Allowed, "the window holds three tokens")
}

// TestLimitsCheckedBeforeRedis: limits an algorithm cannot take are refused with
// ErrInvalidLimit before any round trip (there is no server here to answer).
func TestLimitsCheckedBeforeRedis(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = client.Close() })
	for alg, limit := range map[ratelimit.Algorithm]ratelimit.Limit{
		ratelimit.SlidingWindowLog: {Rate: 1, Burst: args.MaxLogBurst + 1},
		ratelimit.LeakyBucket:      {Rate: 2e6, Burst: 1},
		ratelimit.TokenBucket:      {Rate: 1.0 / 86400, Burst: 104250}, // refills in over 2^53 µs
	} {
		l, err := distributed.New(client, distributed.WithAlgorithm(alg), distributed.WithTimeout(10*time.Second))
		require.NoError(t, err)
		_, err = l.Allow(context.Background(), "k", limit)
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "%v", alg)
	}
}

// TestRedisClockLogAndQueue runs both algorithms on Redis TIME, a request an hour.
func TestRedisClockLogAndQueue(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 2} // T = 1 h, W = 2 h
	second := float64(time.Second)

	log, err := distributed.New(client, distributed.WithPrefix(uniquePrefix()),
		distributed.WithAlgorithm(ratelimit.SlidingWindowLog))
	require.NoError(t, err)
	for _, remaining := range []int{1, 0} {
		res, err := log.Allow(ctx, "k", limit)
		require.NoError(t, err)
		assert.False(t, res.Charge.At.IsZero())
		res.Charge = ratelimit.Charge{} // Redis's clock: TestRedisClock checks it
		assert.Equal(t, ratelimit.Result{Allowed: true, Limit: limit, Remaining: remaining, ResetAfter: 2 * time.Hour}, res)
	}
	res, err := log.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.False(t, res.Allowed)
	assert.InDelta(t, 2*time.Hour, res.RetryAfter, second)

	queue, err := distributed.New(client, distributed.WithPrefix(uniquePrefix()),
		distributed.WithAlgorithm(ratelimit.LeakyBucket))
	require.NoError(t, err)
	res, err = queue.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.False(t, res.Charge.At.IsZero())
	res.Charge = ratelimit.Charge{}
	assert.Equal(t, ratelimit.Result{Allowed: true, Limit: limit, Remaining: 1, ResetAfter: time.Hour}, res)
	res, err = queue.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
	assert.InDelta(t, time.Hour, res.Delay, second)
	assert.InDelta(t, 2*time.Hour, res.ResetAfter, second)
}
