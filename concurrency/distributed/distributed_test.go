package distributed_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

func newClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 64})
	t.Cleanup(func() { c.Close() })
	return c
}

func newLimiter(t testing.TB, client redis.Scripter, opts ...distributed.Option) *distributed.Limiter {
	t.Helper()
	l, err := distributed.New(client, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// redisNow reads server's clock, the one leases are timed by.
func redisNow(t *testing.T, server *redistest.Server) time.Time {
	t.Helper()
	reply, err := server.Do("TIME")
	require.NoError(t, err)
	f := reply.([]any)
	sec, err := strconv.ParseInt(f[0].(string), 10, 64)
	require.NoError(t, err)
	usec, err := strconv.ParseInt(f[1].(string), 10, 64)
	require.NoError(t, err)
	return time.Unix(sec, usec*1000)
}

// holders returns how many permits of key Redis holds, ended leases included, tombstones
// (negative scores: ids released before their acquisition arrived) not.
func holders(t *testing.T, client redis.Cmdable, key string) int64 {
	t.Helper()
	n, err := client.ZCount(t.Context(), distributed.DefaultPrefix+key, "(0", "+inf").Result()
	require.NoError(t, err)
	return n
}

func TestPeakIsMax(t *testing.T) {
	// 1,000 callers, max 10. Each holder counts the holders running with it, and while it
	// runs asks Redis how many permits the key holds (its "work"): neither count exceeds
	// 10, and the holders' own peak reaches it.
	run := func(t *testing.T, client redis.UniversalClient) {
		// 1,000 callers share the client's 64 connections on a loaded test machine: no
		// per-call bound (the test's own deadline applies), and a poll of 100 ms, which
		// still hands each freed permit on within a millisecond or so, with ~1,000 asking.
		l := newLimiter(t, client, distributed.WithTimeout(-1), distributed.WithPoll(100*time.Millisecond))
		var running, most, served atomic.Int64
		// The first holders wait until 10 run at once, so that the peak is reached whatever
		// the scheduling (holders that ran and released one by one would never show it);
		// none of them releases before, so no more than 10 could get in if the limit failed.
		full := make(chan struct{})
		var fill sync.Once
		var wg sync.WaitGroup
		for range 1000 {
			wg.Go(func() {
				p, err := l.Acquire(t.Context(), "peak", 10)
				if !assert.NoError(t, err) {
					return
				}
				defer p.Release()
				served.Add(1)
				n := running.Add(1)
				for old := most.Load(); n > old && !most.CompareAndSwap(old, n); old = most.Load() {
				}
				if n == 10 {
					fill.Do(func() { close(full) })
				}
				select {
				case <-full:
				case <-time.After(time.Minute): // a bound, should the limit admit fewer than 10
					t.Error("10 holders never ran at once")
				}
				inRedis, err := client.ZCard(t.Context(), distributed.DefaultPrefix+"peak").Result()
				assert.NoError(t, err)
				assert.LessOrEqual(t, inRedis, int64(10))
				running.Add(-1)
			})
		}
		wg.Wait()
		assert.Equal(t, int64(10), most.Load())
		assert.Equal(t, int64(1000), served.Load())
	}
	t.Run("node", func(t *testing.T) {
		run(t, newClient(t, redistest.NewServer(t).Addr()))
	})
	t.Run("cluster", func(t *testing.T) {
		cluster := redistest.NewCluster(t)
		client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true, PoolSize: 64})
		t.Cleanup(func() { client.Close() })
		run(t, client)
	})
}

func TestCrashedHolderFreesWithinTTL(t *testing.T) {
	const ttl = 300 * time.Millisecond
	server := redistest.NewServer(t)
	crashing := newClient(t, server.Addr())
	// Bounds as long as each TTL allows (b's is the default 10 s), so that a loaded test
	// machine's stalls are not taken for Redis failures.
	a := newLimiter(t, crashing, distributed.WithTTL(ttl), distributed.WithTimeout(ttl/3))
	b := newLimiter(t, newClient(t, server.Addr()), distributed.WithPoll(10*time.Millisecond), distributed.WithTimeout(time.Second))

	t0 := redisNow(t, server)
	_, err := a.Acquire(t.Context(), "crash", 1)
	require.NoError(t, err)
	// The process "dies": its connection goes, nothing is released, nothing renewed.
	require.NoError(t, crashing.Close())
	_, ok, err := b.TryAcquire(t.Context(), "crash", 1)
	require.NoError(t, err)
	require.False(t, ok, "the crashed holder's permit is still held")

	// b waits (polling, on its own) for the lease to end, for at most TTL + 1 s.
	ctx, cancel := context.WithTimeout(t.Context(), ttl+time.Second)
	defer cancel()
	p, err := b.Acquire(ctx, "crash", 1)
	require.NoError(t, err)
	defer p.Release()
	elapsed := redisNow(t, server).Sub(t0)
	assert.GreaterOrEqual(t, elapsed, ttl, "freed no sooner than the lease ended")
	assert.LessOrEqual(t, elapsed, ttl+time.Second)
}

func TestRenewalKeepsHolder(t *testing.T) {
	const ttl = 300 * time.Millisecond
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	a := newLimiter(t, client, distributed.WithTTL(ttl), distributed.WithTimeout(ttl/3))
	b := newLimiter(t, client, distributed.WithPoll(10*time.Millisecond), distributed.WithTimeout(time.Second))

	t0 := redisNow(t, server)
	p, err := a.Acquire(t.Context(), "long", 1)
	require.NoError(t, err)
	// b asks every ~10 ms for 3 TTLs; a's renewals keep the permit a's all along.
	ctx, cancel := context.WithTimeout(t.Context(), 3*ttl)
	defer cancel()
	_, err = b.Acquire(ctx, "long", 1)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, ratelimit.ErrTimeout, "the caller's deadline, not Redis's failure")
	assert.GreaterOrEqual(t, redisNow(t, server).Sub(t0), 3*ttl, "on the Redis clock too")

	p.Release()
	q, ok, err := b.TryAcquire(t.Context(), "long", 1)
	require.NoError(t, err)
	require.True(t, ok)
	q.Release()
	assert.Equal(t, int64(0), holders(t, client, "long"))
}

// settled waits, bounded, until the goroutines are back to n: the ones a test ended exit
// asynchronously.
func settled(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > n {
		require.True(t, time.Now().Before(deadline), "goroutines: %d, want %d", runtime.NumGoroutine(), n)
		runtime.Gosched()
	}
}

func TestCancelledWaiterLeaksNothing(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	require.NoError(t, client.Ping(t.Context()).Err()) // the pool's goroutines start now
	before := runtime.NumGoroutine()

	l, err := distributed.New(client, distributed.WithPoll(5*time.Millisecond))
	require.NoError(t, err)
	p, err := l.Acquire(t.Context(), "k", 1)
	require.NoError(t, err)
	for range 20 {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
		_, err := l.Acquire(ctx, "k", 1)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.NotErrorIs(t, err, ratelimit.ErrTimeout)
	}
	assert.Equal(t, int64(1), holders(t, client, "k"), "the waiters that left hold nothing")
	p.Release()
	assert.Equal(t, int64(0), holders(t, client, "k"))
	require.NoError(t, l.Close())
	settled(t, before)
}

func TestSecondReleaseChangesNothing(t *testing.T) {
	client := newClient(t, redistest.NewServer(t).Addr())
	l := newLimiter(t, client)
	p, err := l.Acquire(t.Context(), "k", 2)
	require.NoError(t, err)
	p.Release()
	q, err := l.Acquire(t.Context(), "k", 2)
	require.NoError(t, err)
	p.Release()
	assert.Equal(t, int64(1), holders(t, client, "k"))
	q.Release()
	q.Release()
	assert.Equal(t, int64(0), holders(t, client, "k"))
}

func TestLeaseLivesOnTheKey(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	l := newLimiter(t, client, distributed.WithTTL(2*time.Second))
	p, err := l.Acquire(t.Context(), "k", 1)
	require.NoError(t, err)
	defer p.Release()
	// The key expires with its longest lease: 2 s, in milliseconds.
	pttl, err := client.PTTL(t.Context(), distributed.DefaultPrefix+"k").Result()
	require.NoError(t, err)
	assert.Greater(t, pttl, time.Second)
	assert.LessOrEqual(t, pttl, 2*time.Second)
	// The member's score is the lease's end on the Redis clock, µs since 2020.
	// Tombstones (negative scores) are the ids of attempts that timed out on a loaded machine.
	scores, err := client.ZRangeByScoreWithScores(t.Context(), distributed.DefaultPrefix+"k", &redis.ZRangeBy{Min: "(0", Max: "+inf"}).Result()
	require.NoError(t, err)
	require.Len(t, scores, 1)
	end := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(scores[0].Score) * time.Microsecond)
	assert.WithinDuration(t, redisNow(t, server).Add(2*time.Second), end, time.Second)
}

func TestErrorsClassify(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())

	t.Run("queue full", func(t *testing.T) {
		l := newLimiter(t, client, distributed.WithQueue(-1))
		p, err := l.Acquire(t.Context(), "full", 1)
		require.NoError(t, err)
		defer p.Release()
		_, err = l.Acquire(t.Context(), "full", 1)
		assert.ErrorIs(t, err, concurrency.ErrQueueFull)
	})
	t.Run("another type", func(t *testing.T) {
		require.NoError(t, client.Set(t.Context(), distributed.DefaultPrefix+"str", "x", 0).Err())
		l := newLimiter(t, client)
		_, _, err := l.TryAcquire(t.Context(), "str", 1)
		assert.ErrorIs(t, err, ratelimit.ErrInvalidState)
	})
	t.Run("invalid", func(t *testing.T) {
		l := newLimiter(t, client)
		_, err := l.Acquire(t.Context(), "", 1)
		assert.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
		_, _, err = l.TryAcquire(t.Context(), "k", 0)
		assert.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	})
	t.Run("noeviction", func(t *testing.T) {
		// Redis out of memory refuses the admitting ZADD, the script's first write: the
		// acquisition fails and writes nothing; a release, which frees memory, still works.
		// ReturnError shows the error; by default the call would degrade to the share.
		l := newLimiter(t, client, distributed.WithOnFailure(distributed.ReturnError))
		p, err := l.Acquire(t.Context(), "oom", 2)
		require.NoError(t, err)
		_, err = server.Do("CONFIG", "SET", "maxmemory-policy", "noeviction")
		require.NoError(t, err)
		_, err = server.Do("CONFIG", "SET", "maxmemory", "1")
		require.NoError(t, err)
		t.Cleanup(func() { server.Do("CONFIG", "SET", "maxmemory", "0") })
		_, _, err = l.TryAcquire(t.Context(), "oom", 2)
		require.ErrorContains(t, err, "OOM")
		assert.False(t, errors.Is(err, concurrency.ErrQueueFull))
		assert.Equal(t, int64(1), holders(t, client, "oom"))
		p.Release()
		assert.Equal(t, int64(0), holders(t, client, "oom"))
	})
	t.Run("redis down", func(t *testing.T) {
		down := redistest.NewServer(t)
		l := newLimiter(t, newClient(t, down.Addr()), distributed.WithOnFailure(distributed.ReturnError))
		down.Stop()
		_, err := l.Acquire(t.Context(), "k", 1)
		require.Error(t, err)
		assert.False(t, errors.Is(err, concurrency.ErrQueueFull))
		assert.False(t, errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ratelimit.ErrTimeout),
			"a backend failure, not the caller's context: %v", err)
	})
}

func TestClose(t *testing.T) {
	client := newClient(t, redistest.NewServer(t).Addr())
	l, err := distributed.New(client, distributed.WithPoll(5*time.Millisecond))
	require.NoError(t, err)
	p, err := l.Acquire(t.Context(), "k", 1)
	require.NoError(t, err)
	waited := make(chan error)
	go func() {
		_, err := l.Acquire(t.Context(), "k", 1)
		waited <- err
	}()
	require.Eventually(t, func() bool { // the waiter has polled at least once
		n, _ := client.Exists(t.Context(), distributed.DefaultPrefix+"k").Result()
		return n == 1
	}, time.Second, time.Millisecond)
	require.NoError(t, l.Close())
	assert.ErrorIs(t, <-waited, ratelimit.ErrClosed)
	_, _, err = l.TryAcquire(t.Context(), "k", 1)
	assert.ErrorIs(t, err, ratelimit.ErrClosed)
	p.Release() // after Close, still deleted
	assert.Equal(t, int64(0), holders(t, client, "k"))
	assert.NoError(t, l.Close())
}

func TestNew(t *testing.T) {
	_, err := distributed.New(nil)
	assert.Error(t, err)
	_, err = distributed.New((*redis.Client)(nil))
	assert.Error(t, err)
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer client.Close()
	_, err = distributed.New(client, distributed.WithTTL(100*time.Millisecond), distributed.WithTimeout(50*time.Millisecond))
	assert.ErrorContains(t, err, "shorter than 3 × WithTimeout")
	l, err := distributed.New(client) // Redis is not contacted
	require.NoError(t, err)
	assert.NoError(t, l.Close())
}

func TestStats(t *testing.T) {
	client := newClient(t, redistest.NewServer(t).Addr())
	l := newLimiter(t, client)
	other := newLimiter(t, client) // another instance: its permits are not this one's
	assert.Equal(t, concurrency.Stats{}, l.Stats())

	a1, err := l.Acquire(t.Context(), "a", 3)
	require.NoError(t, err)
	a2, err := l.Acquire(t.Context(), "a", 4)
	require.NoError(t, err)
	b, err := l.Acquire(t.Context(), "b", 7)
	require.NoError(t, err)
	c, err := other.Acquire(t.Context(), "c", 1)
	require.NoError(t, err)
	assert.Equal(t, concurrency.Stats{Keys: 2, InFlight: 3, MinLimit: 4, MaxLimit: 7}, l.Stats())

	// A caller waiting for c, which the other instance holds: a key of this limiter's now.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() {
		_, err := l.Acquire(ctx, "c", 1)
		done <- err
	}()
	require.Eventually(t, func() bool { return l.Stats().Waiting == 1 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, concurrency.Stats{Keys: 3, InFlight: 3, Waiting: 1, MinLimit: 1, MaxLimit: 7}, l.Stats())
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)

	a1.Release()
	b.Release()
	assert.Equal(t, concurrency.Stats{Keys: 1, InFlight: 1, MinLimit: 4, MaxLimit: 4}, l.Stats())
	a2.Release()
	c.Release()
	assert.Equal(t, concurrency.Stats{}, l.Stats())
	assert.Equal(t, concurrency.Stats{}, other.Stats())
}

func TestRing(t *testing.T) {
	// A Ring's Subscribe needs its channels at once (go-redis panics without): its waiters
	// poll, and its permits work as on one node.
	server := redistest.NewServer(t)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": server.Addr()}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { ring.Close() })
	l := newLimiter(t, ring, distributed.WithPoll(time.Millisecond))
	p, err := l.Acquire(t.Context(), "ring", 1)
	require.NoError(t, err)
	_, ok, err := l.TryAcquire(t.Context(), "ring", 1)
	require.NoError(t, err)
	assert.False(t, ok)
	got := make(chan error, 1)
	go func() {
		q, err := l.Acquire(t.Context(), "ring", 1)
		if err == nil {
			q.Release()
		}
		got <- err
	}()
	p.Release()
	require.NoError(t, <-got)
	assert.Equal(t, int64(0), holders(t, ring, "ring"))
}

func TestKeyOutlivesItsLongestLease(t *testing.T) {
	// acquire.lua gives the key the expiry of its longest lease whatever the order: a lease
	// of a shorter TTL never shortens it, a longer one extends it, a key holding only ended
	// leases or tombstones keeps its own if longer, and a key without one gets one.
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	long := newLimiter(t, client, distributed.WithTTL(time.Hour))
	short := newLimiter(t, client, distributed.WithTTL(2*time.Second))
	pttl := func(key string) time.Duration {
		d, err := client.PTTL(t.Context(), distributed.DefaultPrefix+key).Result()
		require.NoError(t, err)
		return d
	}
	acquire := func(l *distributed.Limiter, key string) {
		p, err := l.Acquire(t.Context(), key, 10)
		require.NoError(t, err)
		t.Cleanup(p.Release)
	}
	acquire(long, "long-first")
	acquire(short, "long-first")
	assert.Greater(t, pttl("long-first"), 59*time.Minute)
	acquire(short, "short-first")
	assert.LessOrEqual(t, pttl("short-first"), 2*time.Second)
	acquire(long, "short-first")
	assert.Greater(t, pttl("short-first"), 59*time.Minute)

	// No live lease: an ended one (score 1 µs after 2020) under an expiry of an hour, or
	// of a second, or of none.
	for _, tc := range []struct {
		key    string
		expiry time.Duration // 0: none
		by     *distributed.Limiter
		want   func(time.Duration) bool
	}{
		{"ended-long", time.Hour, short, func(d time.Duration) bool { return d > 59*time.Minute }},
		{"ended-short", time.Second, long, func(d time.Duration) bool { return d > 59*time.Minute }},
		{"ended-none", 0, short, func(d time.Duration) bool { return d > time.Second && d <= 2*time.Second }},
	} {
		rkey := distributed.DefaultPrefix + tc.key
		require.NoError(t, client.ZAdd(t.Context(), rkey, redis.Z{Score: 1, Member: "ended"}).Err())
		if tc.expiry > 0 {
			require.NoError(t, client.PExpire(t.Context(), rkey, tc.expiry).Err())
		}
		acquire(tc.by, tc.key)
		assert.True(t, tc.want(pttl(tc.key)), "%s: PTTL %v", tc.key, pttl(tc.key))
	}
}

func TestEndedLeasesAreTrimmed(t *testing.T) {
	// One acquisition in 8, by the Redis clock's microseconds, trims the ended leases: after
	// 200, none is left but with a chance of (7/8)^200, about 10^-12.
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	l := newLimiter(t, client)
	rkey := distributed.DefaultPrefix + "trim"
	for i := range 10 {
		require.NoError(t, client.ZAdd(t.Context(), rkey, redis.Z{Score: float64(1 + i), Member: "ended-" + strconv.Itoa(i)}).Err())
	}
	for range 200 {
		p, err := l.Acquire(t.Context(), "trim", 1)
		require.NoError(t, err)
		p.Release()
	}
	n, err := client.ZCard(t.Context(), rkey).Result()
	require.NoError(t, err)
	assert.Equal(t, int64(0), n)
}
