package valkeyclient_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/sluice-go/ratelimit"
	conc "github.com/sluice-go/ratelimit/concurrency/distributed"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/internal/testhook"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
	"github.com/sluice-go/ratelimit/valkeyclient"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// Both packages' seams take the one Client.
var (
	_ distributed.Client = (*valkeyclient.Client)(nil)
	_ conc.Client        = (*valkeyclient.Client)(nil)
)

// newValkey returns a valkey-go client of addrs (a Cluster's when cluster), closed at
// cleanup.
func newValkey(t testing.TB, addrs []string) valkey.Client {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// topologies are the servers the suites run on: one node and a 3-master Cluster.
var topologies = []struct {
	name  string
	addrs func(t *testing.T) []string
}{
	{"node", func(t *testing.T) []string { return []string{redistest.NewServer(t).Addr()} }},
	{"cluster", func(t *testing.T) []string { return redistest.NewCluster(t).Addrs() }},
}

var prefixes atomic.Int64

// withClock makes the scripts read now instead of Redis TIME (distributed's own tests'
// WithClock).
func withClock(now func() time.Time) distributed.Option {
	return testhook.DistributedClock(now).(distributed.Option)
}

// harness describes to ratelimittest the limiters on c, each with a prefix of its own
// and the test's clock read by the scripts in place of Redis TIME.
func harness(c *valkeyclient.Client) ratelimittest.Harness {
	return ratelimittest.Harness{
		New: func(t testing.TB, cfg ratelimittest.Config) ratelimit.Limiter {
			l, err := distributed.NewWith(c,
				distributed.WithPrefix(fmt.Sprintf("v%d:", prefixes.Add(1))),
				withClock(cfg.Clock.Now),
				distributed.WithTimeout(10*time.Second), // a loaded 2-core machine under -race
				distributed.WithAlgorithm(cfg.Algorithm), distributed.WithReserves(cfg.Reserves))
			require.NoError(t, err)
			t.Cleanup(func() { _ = l.Close() })
			return l
		},
		Reserves: true, Warmup: true, Quotas: true, KeepUsage: true,
	}
}

// TestConformance runs the rules of the contract on valkey-go, on a node and a Cluster,
// for every algorithm but the leaky bucket: its rules of Wait's queue run in a
// testing/synctest bubble, where valkey-go cannot (a call waits on a sync.Cond that the
// client's own goroutines, outside the bubble, signal: a fatal error under synctest).
// TestAgreesWithLocal plays the leaky bucket's decisions.
func TestConformance(t *testing.T) {
	t.Parallel()
	var algorithms []ratelimit.Algorithm
	for _, a := range ratelimittest.Algorithms() {
		if a != ratelimit.LeakyBucket {
			algorithms = append(algorithms, a)
		}
	}
	for _, top := range topologies {
		t.Run(top.name, func(t *testing.T) {
			t.Parallel()
			h := harness(valkeyclient.New(newValkey(t, top.addrs(t))))
			h.Algorithms = algorithms
			ratelimittest.Run(t, h)
		})
	}
}

// TestAgreesWithLocal plays the same random timelines on the local backend and on the
// scripts through valkey-go, and requires identical Results (see ratelimittest.Agree): the
// arguments valkeyclient formats are the ones go-redis would send.
func TestAgreesWithLocal(t *testing.T) {
	t.Parallel()
	loc := ratelimittest.Harness{
		New: func(t testing.TB, c ratelimittest.Config) ratelimit.Limiter {
			l := local.New(local.WithClock(c.Clock.Now), local.WithAlgorithm(c.Algorithm), local.WithCleanupInterval(-1))
			t.Cleanup(func() { l.Close() })
			return l
		},
		Warmup: true, Quotas: true, KeepUsage: true,
	}
	c := valkeyclient.New(newValkey(t, []string{redistest.NewServer(t).Addr()}))
	ratelimittest.Agree(t, loc, harness(c))
}

// TestPausedRedis: a Redis that stops answering (CLIENT PAUSE) costs the limiter's
// deadline and fails with ratelimit.ErrTimeout; a caller whose own deadline comes first
// gets its context's error instead.
func TestPausedRedis(t *testing.T) {
	server := redistest.NewServer(t)
	l, err := distributed.NewWith(valkeyclient.New(newValkey(t, []string{server.Addr()})),
		distributed.WithTimeout(50*time.Millisecond))
	require.NoError(t, err)
	limit := ratelimit.Limit{Rate: 1, Burst: 1}
	_, err = l.Allow(t.Context(), "k", limit) // connected, the script loaded
	require.NoError(t, err)
	_, err = server.Do("CLIENT", "PAUSE", "3000", "ALL")
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = server.Do("CLIENT", "UNPAUSE") })

	res, err := l.Allow(t.Context(), "k", limit)
	require.ErrorIs(t, err, ratelimit.ErrTimeout)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Equal(t, ratelimit.Result{Limit: limit}, res)

	short, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	_, err = l.Allow(short, "k", limit)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NotErrorIs(t, err, ratelimit.ErrTimeout)
}

// TestRedisStopped: Redis goes away mid-run; every call then fails, with no panic and no
// Result but its Limit.
func TestRedisStopped(t *testing.T) {
	server := redistest.NewServer(t)
	l, err := distributed.NewWith(valkeyclient.New(newValkey(t, []string{server.Addr()})),
		distributed.WithTimeout(time.Second))
	require.NoError(t, err)
	limit := ratelimit.Limit{Rate: 1, Burst: 1}
	res, err := l.Allow(t.Context(), "k", limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	server.Stop()
	for i := range 5 {
		res, err := l.Allow(t.Context(), "k", limit)
		require.Error(t, err, "call %d", i)
		require.Equal(t, ratelimit.Result{Limit: limit}, res, "call %d", i)
	}
}

// TestScriptFlush: Redis forgets the scripts mid-run (SCRIPT FLUSH, as after a restart
// or a failover); the next call loads them again, and no request fails or counts twice.
func TestScriptFlush(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock()
	l, err := distributed.NewWith(valkeyclient.New(newValkey(t, []string{server.Addr()})),
		withClock(clock.Now), distributed.WithTimeout(10*time.Second)) // a loaded machine
	require.NoError(t, err)
	limit := ratelimit.Limit{Rate: 1, Burst: 50}
	admitted := 0
	for i := range 100 {
		if i%20 == 10 {
			_, err := server.Do("SCRIPT", "FLUSH")
			require.NoError(t, err)
		}
		res, err := l.Allow(t.Context(), "k", limit)
		require.NoError(t, err, "call %d", i)
		if res.Allowed {
			admitted++
		}
	}
	require.Equal(t, 50, admitted)
}

// TestConcurrentCallers: 64 goroutines on one bucket that does not refill while the test
// runs, through one valkey-go client, which pipelines them: exactly Burst win.
func TestConcurrentCallers(t *testing.T) {
	for _, top := range topologies {
		t.Run(top.name, func(t *testing.T) {
			l, err := distributed.NewWith(valkeyclient.New(newValkey(t, top.addrs(t))),
				distributed.WithTimeout(10*time.Second))
			require.NoError(t, err)
			limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 100} // a token an hour
			var admitted, calls atomic.Int64
			var wg sync.WaitGroup
			for range 64 {
				wg.Go(func() {
					for range 10 {
						res, err := l.Allow(context.Background(), "hot", limit)
						if !assert.NoError(t, err) {
							return
						}
						calls.Add(1)
						if res.Allowed {
							admitted.Add(1)
						}
					}
				})
			}
			wg.Wait()
			require.Equal(t, int64(640), calls.Load())
			require.Equal(t, int64(limit.Burst), admitted.Load())
		})
	}
}

// TestReplyErrors: a key of another type is the bucket's fault (ratelimit.ErrInvalidState)
// for a refund, told from Redis's by the reply valkeyclient reports, and Check loads every
// script on every node.
func TestReplyErrors(t *testing.T) {
	for _, top := range topologies {
		t.Run(top.name, func(t *testing.T) {
			vc := newValkey(t, top.addrs(t))
			l, err := distributed.NewWith(valkeyclient.New(vc), distributed.WithPrefix("re:"))
			require.NoError(t, err)
			require.NoError(t, l.Check(t.Context()))
			limit := ratelimit.Limit{Rate: 1, Burst: 5}
			res, err := l.Allow(t.Context(), "k", limit)
			require.NoError(t, err)
			require.NoError(t, vc.Do(t.Context(), vc.B().Del().Key("re:k:tb:1:5").Build()).Error())
			require.NoError(t, vc.Do(t.Context(), vc.B().Lpush().Key("re:k:tb:1:5").Element("x").Build()).Error())
			_, err = l.Refund(t.Context(), "k", limit, 1, res.Charge)
			require.ErrorIs(t, err, ratelimit.ErrInvalidState)
		})
	}
}

// TestConcurrencyLimiter: concurrency/distributed through valkey-go: 100 callers never
// hold more than max permits at once in Redis, all are served, and every permit is
// released.
func TestConcurrencyLimiter(t *testing.T) {
	for _, top := range topologies {
		t.Run(top.name, func(t *testing.T) {
			vc := newValkey(t, top.addrs(t))
			l, err := conc.NewWith(valkeyclient.New(vc), conc.WithTimeout(-1),
				conc.WithPoll(50*time.Millisecond), conc.WithOnFailure(conc.ReturnError))
			require.NoError(t, err)
			t.Cleanup(func() { l.Close() })
			held := func() int64 {
				n, err := vc.Do(context.Background(), vc.B().Zcount().Key(conc.DefaultPrefix+"k").Min("(0").Max("+inf").Build()).AsInt64()
				assert.NoError(t, err)
				return n
			}
			var served atomic.Int64
			var wg sync.WaitGroup
			for range 100 {
				wg.Go(func() {
					p, err := l.Acquire(t.Context(), "k", 3)
					if !assert.NoError(t, err) {
						return
					}
					assert.LessOrEqual(t, held(), int64(3))
					served.Add(1)
					p.Release()
				})
			}
			wg.Wait()
			assert.Equal(t, int64(100), served.Load())
			assert.Equal(t, int64(0), held())

			require.NoError(t, vc.Do(t.Context(), vc.B().Set().Key(conc.DefaultPrefix+"str").Value("x").Build()).Error())
			_, _, err = l.TryAcquire(t.Context(), "str", 1)
			assert.ErrorIs(t, err, ratelimit.ErrInvalidState)
		})
	}
}
