package distributed_test

import (
	"context"
	"math/rand/v2"
	"net"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// hungRedis listens on loopback, accepts every connection and never answers, as a Redis
// stuck in a long script or behind a dead network path would. It returns the address; the
// listener and its connections close when the test ends.
func hungRedis(t *testing.T) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	return ln.Addr().String(), func() {
		ln.Close()
		<-done
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	}
}

func TestHungRedisLeavesNoGoroutine(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []distributed.Option
	}{
		{"defaults", nil},
		{"short timeout", []distributed.Option{distributed.WithTimeout(5 * time.Millisecond)}},
		{"no timeout", []distributed.Option{distributed.WithTimeout(-1), distributed.WithTTL(600 * time.Millisecond)}},
		{"return error", []distributed.Option{distributed.WithOnFailure(distributed.ReturnError)}},
		{"no timeout, return error", []distributed.Option{distributed.WithTimeout(-1), distributed.WithTTL(600 * time.Millisecond),
			distributed.WithOnFailure(distributed.ReturnError)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			addr, stop := hungRedis(t)
			client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 16})
			l, err := distributed.New(client, tc.opts...)
			require.NoError(t, err)
			var wg sync.WaitGroup
			for g := range 16 {
				wg.Go(func() {
					for i := range 4 {
						ctx, cancel := context.WithTimeout(t.Context(), time.Duration(1+(g+i)%30)*time.Millisecond)
						if g%2 == 0 {
							p, err := l.Acquire(ctx, "hung", 3)
							if err == nil {
								p.Release() // a permit of the share
							}
						} else {
							p, ok, _ := l.TryAcquire(ctx, "hung", 3)
							if ok {
								p.Release()
							}
						}
						cancel()
					}
				})
			}
			wg.Wait()
			require.NoError(t, l.Close())
			require.NoError(t, client.Close())
			stop()
			settled(t, before)
		})
	}
}

func TestAttackerLeavesNoOrphan(t *testing.T) {
	// 64 goroutines acquire with deadlines of 1 to 40 ms and hold for at most 0.5 ms: many
	// give up while their acquisition is on its way, some of those after Redis granted it.
	// Each run ends with every slot free: the ids named before the call are released in
	// the background, and an acquisition arriving after its release is refused.
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	l := newLimiter(t, client)
	for run := range 10 {
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for range 8 {
					ctx, cancel := context.WithTimeout(t.Context(), time.Duration(1+rand.IntN(40))*time.Millisecond)
					p, err := l.Acquire(ctx, "attacked", 3)
					if err == nil {
						time.Sleep(time.Duration(rand.IntN(500)) * time.Microsecond) // the work
						p.Release()
					}
					cancel()
				}
			})
		}
		wg.Wait()
		require.Eventually(t, func() bool { return distributed.Pending(l) == 0 }, 10*time.Second, time.Millisecond,
			"run %d: releases still pending", run)
		// Pending no longer counts the releases on their way to Redis: on a loaded machine
		// the last may still be. A lease nobody holds counts until a script drops it, past
		// its TTL: half of it is time enough for a release to land.
		require.Eventually(t, func() bool {
			n, err := client.ZCount(t.Context(), distributed.DefaultPrefix+"attacked", "(0", "+inf").Result()
			return err == nil && n == 0
		}, distributed.DefaultTTL/2, time.Millisecond, "run %d: a lease held by nobody", run)
		require.Equal(t, int64(0), holders(t, client, "attacked"), "run %d: a lease held by nobody", run)
		require.Zero(t, l.Stats().InFlight, "run %d", run)
	}
}

func TestRestartedRedisCountsTheHolders(t *testing.T) {
	for _, lose := range []string{"restart", "flush"} {
		t.Run(lose, func(t *testing.T) {
			// Renewals every second: the restart must take less than a TTL, or the holders
			// may no longer be sure their leases were live, and stop renewing them.
			const ttl = 3 * time.Second
			server := redistest.NewServer(t)
			client := newClient(t, server.Addr())
			a := newLimiter(t, client, distributed.WithTTL(ttl), distributed.WithTimeout(ttl/3))
			var held []interface{ Release() }
			for range 3 {
				p, err := a.Acquire(t.Context(), "lost", 3)
				require.NoError(t, err)
				held = append(held, p)
			}
			if lose == "restart" {
				server = server.Restart(t)
			} else {
				_, err := server.Do("FLUSHALL")
				require.NoError(t, err)
			}
			// The holders' renewals add their leases back: Redis counts the 3 running.
			require.Eventually(t, func() bool {
				n, err := client.ZCount(t.Context(), distributed.DefaultPrefix+"lost", "(0", "+inf").Result()
				return err == nil && n == 3
			}, 10*time.Second, time.Millisecond)
			b := newLimiter(t, newClient(t, server.Addr()), distributed.WithTimeout(time.Second))
			_, ok, err := b.TryAcquire(t.Context(), "lost", 3)
			require.NoError(t, err)
			assert.False(t, ok, "no more than max after recovery")
			for _, p := range held {
				p.Release()
			}
			assert.Equal(t, int64(0), holders(t, client, "lost"), "the holders' releases free their places")
			for range 3 {
				_, ok, err := b.TryAcquire(t.Context(), "lost", 3)
				require.NoError(t, err)
				require.True(t, ok)
			}
			_, ok, err = b.TryAcquire(t.Context(), "lost", 3)
			require.NoError(t, err)
			assert.False(t, ok)
		})
	}
}

func TestReleaseWakesWaiter(t *testing.T) {
	// No poll within the test's time: only a wake-up can hand the permit on. In this
	// process (one limiter), and across processes (two limiters, two connections: the
	// wake-up goes through Redis pub/sub).
	server := redistest.NewServer(t)
	for _, tc := range []struct {
		name   string
		shared bool
	}{{"same limiter", true}, {"another limiter", false}} {
		t.Run(tc.name, func(t *testing.T) {
			a := newLimiter(t, newClient(t, server.Addr()), distributed.WithPoll(time.Hour))
			b := a
			if !tc.shared {
				b = newLimiter(t, newClient(t, server.Addr()), distributed.WithPoll(time.Hour))
			}
			key := "wake-" + tc.name
			p, err := a.Acquire(t.Context(), key, 1)
			require.NoError(t, err)
			got := make(chan error, 1)
			go func() {
				q, err := b.Acquire(t.Context(), key, 1)
				if err == nil {
					q.Release()
				}
				got <- err
			}()
			require.Eventually(t, func() bool { return b.Stats().Waiting == 1 }, 10*time.Second, time.Millisecond)
			if !tc.shared {
				// Subscribed: PUBSUB NUMSUB says so.
				require.Eventually(t, func() bool {
					r, err := server.Do("PUBSUB", "NUMSUB", distributed.DefaultPrefix+key)
					return err == nil && r.([]any)[1] == int64(1)
				}, 10*time.Second, time.Millisecond)
			}
			p.Release()
			require.NoError(t, <-got)
		})
	}
}

func TestReleaseWakesWaiterOnCluster(t *testing.T) {
	// On a Cluster the wake-ups go on shard channels: the waiting limiter subscribes to each
	// key's on the node holding the key's slot (one connection per slot), and release.lua
	// publishes there. No poll within the test's time: only a wake-up hands a permit on.
	cluster := redistest.NewCluster(t)
	newCluster := func() *redis.ClusterClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true})
		t.Cleanup(func() { c.Close() })
		return c
	}
	a := newLimiter(t, newCluster(), distributed.WithPoll(time.Hour))
	b := newLimiter(t, newCluster(), distributed.WithPoll(time.Hour))
	// Keys of three slots, one on each master.
	byNode := map[*redistest.Server]string{}
	for i := 0; len(byNode) < 3; i++ {
		key := "wake-" + strconv.Itoa(i)
		if n := cluster.MasterOf(t, distributed.DefaultPrefix+key); byNode[n] == "" {
			byNode[n] = key
		}
	}
	held := map[string]concurrency.Permit{}
	for _, key := range byNode {
		p, err := a.Acquire(t.Context(), key, 1)
		require.NoError(t, err)
		held[key] = p
	}
	// A bound on the waits, should a wake-up never come: a failure, not a figure.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	got := make(chan error, len(held))
	for key := range held {
		go func() {
			q, err := b.Acquire(ctx, key, 1)
			if err == nil {
				q.Release()
			}
			got <- err
		}()
	}
	require.Eventually(t, func() bool { return b.Stats().Waiting == 3 }, 10*time.Second, time.Millisecond)
	// Each key's shard channel has one subscriber, on its node; no plain channel has any.
	for node, key := range byNode {
		require.Eventually(t, func() bool {
			r, err := node.Do("PUBSUB", "SHARDNUMSUB", distributed.DefaultPrefix+key)
			return err == nil && r.([]any)[1] == int64(1)
		}, 10*time.Second, time.Millisecond)
		r, err := node.Do("PUBSUB", "NUMSUB", distributed.DefaultPrefix+key)
		require.NoError(t, err)
		assert.Equal(t, int64(0), r.([]any)[1])
	}
	for _, p := range held {
		p.Release()
	}
	for range held {
		require.NoError(t, <-got)
	}
}

func TestClusterSubscriptionsCapped(t *testing.T) {
	// A limiter subscribes on at most 32 slots at once: with waiters on 33 keys of 33 slots,
	// 32 shard channels have a subscriber, and releasing the 33 permits wakes 32 waiters (the
	// 33rd polls, every hour here).
	cluster := redistest.NewCluster(t)
	newCluster := func() *redis.ClusterClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true, PoolSize: 64})
		t.Cleanup(func() { c.Close() })
		return c
	}
	client := newCluster()
	a := newLimiter(t, client, distributed.WithPoll(time.Hour))
	b := newLimiter(t, newCluster(), distributed.WithPoll(time.Hour))
	var keys []string
	slots := map[int64]bool{}
	for i := 0; len(keys) < 33; i++ {
		key := "cap-" + strconv.Itoa(i)
		slot, err := client.ClusterKeySlot(t.Context(), distributed.DefaultPrefix+key).Result()
		require.NoError(t, err)
		if !slots[slot] {
			slots[slot] = true
			keys = append(keys, key)
		}
	}
	var held []concurrency.Permit
	for _, key := range keys {
		p, err := a.Acquire(t.Context(), key, 1)
		require.NoError(t, err)
		held = append(held, p)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	got := make(chan error, len(keys))
	for _, key := range keys {
		go func() {
			q, err := b.Acquire(ctx, key, 1)
			if err == nil {
				q.Release()
			}
			got <- err
		}()
	}
	require.Eventually(t, func() bool { return b.Stats().Waiting == 33 }, 10*time.Second, time.Millisecond)
	subscribed := func() int64 {
		var n int64
		for _, node := range cluster.Nodes() {
			args := []string{"PUBSUB", "SHARDNUMSUB"}
			for _, key := range keys {
				args = append(args, distributed.DefaultPrefix+key)
			}
			r, err := node.Do(args...)
			require.NoError(t, err)
			counts := r.([]any)
			for i := 1; i < len(counts); i += 2 {
				n += counts[i].(int64)
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return subscribed() == 32 }, 10*time.Second, time.Millisecond)
	for _, p := range held {
		p.Release()
	}
	for range 32 {
		require.NoError(t, <-got)
	}
	// The 33rd waiter, past the cap, polls; once a woken waiter's slot goes idle it may
	// subscribe in its place and find its permit free (a subscription is followed by a
	// look at Redis), so it ends acquired or, when the test gives up on it, canceled.
	cancel()
	if err := <-got; err != nil {
		assert.ErrorIs(t, err, context.Canceled)
	}
}
