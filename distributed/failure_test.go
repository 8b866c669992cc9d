package distributed_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// noLeaks fails t if goroutines started during the test outlive its cleanups. A deadline
// tick's timer that has fired is not counted: its goroutine only closes a channel, and on a
// loaded machine may wait its turn to run past the check.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	tick := goleak.IgnoreTopFunction("github.com/sluice-go/ratelimit/distributed.(*tick).close-fm")
	t.Cleanup(func() { goleak.VerifyNone(t, ignore, tick) }) // runs after the later cleanups
}

// hole is a loopback TCP server that accepts connections and never answers: a Redis that
// hangs.
type hole struct {
	addr     string
	accepted atomic.Int64
}

func blackhole(t *testing.T) *hole {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	h := &hole{addr: ln.Addr().String()}
	var conns []net.Conn
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			h.accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return h
}

// errorsWithin calls l n times and requires each call to fail, wrapping want, in at most
// bound. The bound is loose on purpose: it tells "the limiter's deadline" from "the client's
// seconds of timeouts and retries" on a loaded machine.
func errorsWithin(t *testing.T, l ratelimit.Limiter, n int, bound time.Duration, want error) {
	t.Helper()
	limit := ratelimit.Limit{Rate: 1, Burst: 1}
	for i := range n {
		start := time.Now()
		res, err := l.Allow(context.Background(), "k", limit)
		took := time.Since(start)
		require.Error(t, err, "call %d", i)
		if want != nil {
			require.ErrorIs(t, err, want, "call %d", i)
		}
		require.Equal(t, ratelimit.Result{Limit: limit}, res, "call %d", i)
		require.Less(t, took, bound, "call %d", i)
	}
}

// TestHungRedis: a Redis that accepts and never answers costs the limiter's deadline, not
// the client's ReadTimeout (5 s) with retries, whether or not the client honours context
// deadlines itself.
func TestHungRedis(t *testing.T) {
	for _, honours := range []bool{true, false} {
		t.Run(map[bool]string{true: "ContextTimeoutEnabled", false: "Guarded"}[honours], func(t *testing.T) {
			noLeaks(t)
			h := blackhole(t)
			client := redis.NewClient(&redis.Options{
				Addr:                  h.addr,
				ContextTimeoutEnabled: honours,
				// Let abandoned calls end soon, so the leak check does not wait for them.
				ReadTimeout: 300 * time.Millisecond,
				MaxRetries:  -1,
			})
			defer client.Close()
			l, err := distributed.New(client, distributed.WithTimeout(50*time.Millisecond))
			require.NoError(t, err)
			errorsWithin(t, l, 5, time.Second, ratelimit.ErrTimeout)

			// A caller whose own deadline comes first gets its context's error, which says
			// nothing of Redis's health: not ErrTimeout.
			short, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
			defer cancel()
			_, err = l.Allow(short, "k", ratelimit.Limit{Rate: 1, Burst: 1})
			assert.ErrorIs(t, err, context.DeadlineExceeded)
			assert.NotErrorIs(t, err, ratelimit.ErrTimeout)

			// Many at once: the calls that queue behind the stalled ones (to share a
			// pipeline) are bounded by the same deadline.
			limit := ratelimit.Limit{Rate: 1, Burst: 1}
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					start := time.Now()
					_, err := l.Allow(context.Background(), "k", limit)
					assert.ErrorIs(t, err, ratelimit.ErrTimeout)
					assert.ErrorIs(t, err, context.DeadlineExceeded)
					assert.Less(t, time.Since(start), time.Second)
				})
			}
			wg.Wait()
		})
	}
}

// TestRedisStopped: Redis goes away mid-run; every call then fails within the deadline, with
// no panic, and no goroutine outlives the client.
func TestRedisStopped(t *testing.T) {
	noLeaks(t)
	server := redistest.NewServer(t)
	client := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()
	l, err := distributed.New(client, distributed.WithPrefix(uniquePrefix()))
	require.NoError(t, err)
	res, err := l.Allow(context.Background(), "k", ratelimit.Limit{Rate: 1, Burst: 1})
	require.NoError(t, err)
	require.True(t, res.Allowed)

	server.Stop()
	errorsWithin(t, l, 20, time.Second, nil)
}

// TestScriptFlush: Redis forgets the script mid-run (SCRIPT FLUSH, as after a restart or a
// failover); the next call loads it again, and no request fails or is counted twice.
func TestScriptFlush(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock()
	l := newLimiter(t, newClient(t, server.Addr()), clock)
	limit := ratelimit.Limit{Rate: 1, Burst: 50}
	admitted := 0
	for i := range 100 {
		if i%20 == 10 {
			_, err := server.Do("SCRIPT", "FLUSH")
			require.NoError(t, err)
		}
		res, err := l.Allow(context.Background(), "k", limit)
		require.NoError(t, err, "call %d", i)
		if res.Allowed {
			admitted++
		}
	}
	require.Equal(t, 50, admitted)
}

// TestConcurrentClients: 4 clients × 16 goroutines on one bucket that does not refill while
// the test runs; exactly Burst requests win.
func TestConcurrentClients(t *testing.T) {
	server := redistest.NewServer(t)
	prefix := distributed.WithPrefix(uniquePrefix())
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 100} // a token an hour
	var admitted, calls atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 4 {
		l, err := distributed.New(newClient(t, server.Addr()), prefix, distributed.WithTimeout(10*time.Second))
		require.NoError(t, err)
		for range 16 {
			wg.Go(func() {
				for range 10 {
					res, err := l.Allow(context.Background(), "hot", limit)
					if err != nil {
						errs <- err
						return
					}
					calls.Add(1)
					if res.Allowed {
						admitted.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(640), calls.Load())
	require.Equal(t, int64(limit.Burst), admitted.Load())
}

// TestConcurrentRefill: 4 clients × 16 goroutines on a bucket of 200/s for 2 s on the Redis
// clock. Admitted requests number at most burst + rate × elapsed, and at least 99 % of it:
// the bucket never hands out a token twice and wastes almost none.
//
// Elapsed is bracketed on the test's side, so the bounds hold however the machine schedules
// the test: every decision happened after the first request was sent and before the last
// reply came back (the upper bound), and the decisions spanned at least from the first reply
// to the last send (the lower one). At the end the test drains the bucket until it denies,
// so no token due is left in it. Tokens can only be wasted while the bucket is full, which
// takes Burst/Rate without any request; a burst of 100 makes that half a second, so that a
// loaded machine pausing the whole test process does not fail it.
func TestConcurrentRefill(t *testing.T) {
	server := redistest.NewServer(t)
	prefix := distributed.WithPrefix(uniquePrefix())
	limit := ratelimit.Limit{Rate: 200, Burst: 100}
	type span struct{ firstSend, firstReply, lastSend, lastReply time.Time }
	spans := make([]span, 64)
	var admitted atomic.Int64
	var stop atomic.Bool
	var wg, ready sync.WaitGroup
	ready.Add(64)
	start := make(chan struct{})
	errs := make(chan error, 128)
	for c := range 4 {
		l, err := distributed.New(newClient(t, server.Addr()), prefix, distributed.WithTimeout(10*time.Second))
		require.NoError(t, err)
		for g := range 16 {
			sp := &spans[c*16+g]
			wg.Go(func() {
				// Warm up (a connection each, goroutines running) on a key of its own, so
				// that the load starts at full speed: while requests trickle in slower
				// than the refill, the bucket stays full and the refill is lost, as a token
				// bucket's should be.
				if _, err := l.Allow(context.Background(), "warm", limit); err != nil {
					errs <- err
				}
				ready.Done()
				<-start
				for !stop.Load() {
					sent := time.Now()
					res, err := l.Allow(context.Background(), "hot", limit)
					if err != nil {
						errs <- err
						return
					}
					replied := time.Now()
					if sp.firstSend.IsZero() {
						sp.firstSend, sp.firstReply = sent, replied
					}
					sp.lastSend, sp.lastReply = sent, replied
					if res.Allowed {
						admitted.Add(1)
					}
				}
			})
		}
	}
	ready.Wait()
	close(start)
	time.Sleep(2 * time.Second) // the load runs this long on the real clocks; nothing is faked
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	// Drain what the bucket still holds (it may have filled while the process was paused
	// near the end), so that at the last decision every token due has been handed out.
	drain := span{firstSend: time.Now()}
	l, err := distributed.New(newClient(t, server.Addr()), prefix, distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)
	for {
		drain.lastSend = time.Now()
		res, err := l.Allow(context.Background(), "hot", limit)
		require.NoError(t, err)
		drain.lastReply = time.Now()
		if !res.Allowed {
			break
		}
		admitted.Add(1)
	}
	drain.firstReply = drain.lastReply
	all := drain
	for _, sp := range spans {
		all.firstSend = earliest(all.firstSend, sp.firstSend)
		all.firstReply = earliest(all.firstReply, sp.firstReply)
		all.lastSend = latest(all.lastSend, sp.lastSend)
		all.lastReply = latest(all.lastReply, sp.lastReply)
	}
	most := all.lastReply.Sub(all.firstSend)
	least := all.lastSend.Sub(all.firstReply)
	upper := float64(limit.Burst) + limit.Rate*most.Seconds()
	lower := 0.99 * (float64(limit.Burst) + limit.Rate*least.Seconds())
	got := float64(admitted.Load())
	t.Logf("admitted %v; decisions spanned %v to %v; bounds %.1f..%.1f", got, least, most, lower, upper)
	require.LessOrEqual(t, got, upper)
	require.GreaterOrEqual(t, got, lower)
}

func earliest(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
