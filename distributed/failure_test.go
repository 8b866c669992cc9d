package distributed_test

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/conformance"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// noLeaks fails t if goroutines started during the test outlive its cleanups.
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // runs after the later cleanups
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
			errorsWithin(t, l, 5, time.Second, context.DeadlineExceeded)
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
	clock := conformance.NewClock()
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
// the bucket never hands out a token twice and wastes almost none. Tokens are wasted only
// while the bucket is full, which happens when no request reaches Redis for Burst/Rate; a
// burst of 100 makes that half a second, so that a loaded machine pausing the test process
// does not fail it (with a burst of 10, a 50 ms pause would).
func TestConcurrentRefill(t *testing.T) {
	server := redistest.NewServer(t)
	prefix := distributed.WithPrefix(uniquePrefix())
	limit := ratelimit.Limit{Rate: 200, Burst: 100}
	var admitted atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	start := make(chan struct{})
	for range 4 {
		l, err := distributed.New(newClient(t, server.Addr()), prefix, distributed.WithTimeout(10*time.Second))
		require.NoError(t, err)
		for range 16 {
			wg.Go(func() {
				<-start
				for !stop.Load() {
					res, err := l.Allow(context.Background(), "hot", limit)
					if err != nil {
						errs <- err
						return
					}
					if res.Allowed {
						admitted.Add(1)
					}
				}
			})
		}
	}
	begin := time.Now()
	close(start)
	time.Sleep(2 * time.Second) // the test's load runs for this long; no time is faked here
	stop.Store(true)
	stopped := time.Since(begin)
	wg.Wait()
	elapsed := time.Since(begin)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	upper := float64(limit.Burst) + limit.Rate*elapsed.Seconds()
	lower := 0.99 * (float64(limit.Burst) + limit.Rate*stopped.Seconds())
	got := float64(admitted.Load())
	require.LessOrEqual(t, got, upper)
	require.GreaterOrEqual(t, got, lower)
	t.Logf("admitted %v in %v (bounds %.1f..%.1f)", got, elapsed, lower, upper)
}
