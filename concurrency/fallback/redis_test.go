package fallback_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/distributed"
	"github.com/sluice-go/ratelimit/concurrency/fallback"
	"github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestRedisOutage: a real Redis is killed while one of its permits is held, and restarted
// empty. Max 12 shared by 3 instances: during the outage, 50 callers of this instance are
// admitted 4 at a time, never more, as the holders themselves count; after it, the first
// probe closes the breaker, and each permit is released to the limiter that granted it.
// The breaker runs on a fake clock; Redis on its own.
func TestRedisOutage(t *testing.T) {
	const max, instances, share = 12, 3, 4
	server := redistest.NewServer(t)
	// No retries: a refused connection is a failure at once.
	client := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { client.Close() })
	// ReturnError: the fallback's breaker decides. A TTL of an hour: no renewal during the
	// test, so that the lease Redis loses at the restart stays lost.
	primary, err := distributed.New(client, distributed.WithTimeout(time.Second), distributed.WithTTL(time.Hour),
		distributed.WithOnFailure(distributed.ReturnError))
	require.NoError(t, err)
	t.Cleanup(func() { primary.Close() })
	secondary := local.New()
	t.Cleanup(func() { secondary.Close() })
	clock := ratelimittest.NewClock()
	var edges []string
	l := fallback.New(primary, secondary, fallback.WithInstances(instances), fallback.WithClock(clock.Now),
		fallback.WithStateHook(func(c fallback.StateChange) {
			if c.Edge() {
				edges = append(edges, c.From.String()+" → "+c.To.String())
			}
		}))
	inRedis := func() int64 {
		// Live leases; not the tombstones of the acquisitions that failed.
		n, err := client.ZCount(t.Context(), distributed.DefaultPrefix+"k", "(0", "+inf").Result()
		require.NoError(t, err)
		return n
	}

	before, err := l.Acquire(t.Context(), "k", max)
	require.NoError(t, err)
	require.Equal(t, int64(1), inRedis())

	server.Kill()
	// The first holders wait until the share is full, so that the peak is reached whatever
	// the scheduling; none of them releases before, so no more than the share get in.
	var running, peak atomic.Int64
	full := make(chan struct{})
	var fill sync.Once // the share can be full again later, once the first holders leave
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			p, err := l.Acquire(t.Context(), "k", max)
			if !assert.NoError(t, err) {
				return
			}
			defer p.Release()
			n := running.Add(1)
			for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
			}
			if n == share {
				fill.Do(func() { close(full) })
			}
			<-full
			running.Add(-1)
		})
	}
	wg.Wait()
	assert.Equal(t, int64(share), peak.Load())
	assert.Equal(t, fallback.Open, l.State())
	during, ok, err := l.TryAcquire(t.Context(), "k", max)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, 1, secondary.Stats().InFlight)
	// before, granted by Redis (max 12), and during, by the secondary (its share, 4).
	assert.Equal(t, concurrency.Stats{Keys: 2, InFlight: 2, MinLimit: share, MaxLimit: max}, l.Stats())

	server = server.Restart(t)
	// go-redis answers with its last dial error until its pool has dialled again in the
	// background (about a second): wait for the client, not for the breaker.
	require.Eventually(t, func() bool { return client.Ping(t.Context()).Err() == nil }, 10*time.Second, 10*time.Millisecond)
	clock.Advance(fallback.DefaultCooldown)
	after, ok, err := l.TryAcquire(t.Context(), "k", max)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, fallback.Closed, l.State())
	assert.Equal(t, int64(1), inRedis(), "the probe's permit is Redis's")

	during.Release()
	assert.Equal(t, 0, secondary.Stats().InFlight, "the secondary's permit went back to it")
	assert.Equal(t, int64(1), inRedis())
	after.Release()
	assert.Equal(t, int64(0), inRedis(), "Redis's permit went back to it")
	before.Release() // to a Redis that lost it: nothing happens
	assert.Equal(t, int64(0), inRedis())
	assert.Equal(t, 0, secondary.Stats().InFlight)
	// Nothing in flight; the secondary still tracks the key, idle, with its share.
	assert.Equal(t, concurrency.Stats{Keys: 1, MinLimit: share, MaxLimit: share}, l.Stats())
	assert.Equal(t, []string{"closed → open", "half-open → closed"}, edges)
}
