package distributed_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/concurrency/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

func TestTwoScriptsPerPermit(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	l := newLimiter(t, client)
	p, err := l.Acquire(t.Context(), "k", 1) // loads the scripts (EVALSHA, then SCRIPT LOAD)
	require.NoError(t, err)
	p.Release()
	// The limiter has said it is alive (members.lua), once at New, then every TTL/3 (10 s).
	require.Eventually(t, func() bool {
		n, err := client.Exists(t.Context(), distributed.DefaultPrefix).Result()
		return err == nil && n == 1
	}, 10*time.Second, time.Millisecond)
	_, err = server.Do("CONFIG", "RESETSTAT")
	require.NoError(t, err)
	for range 10 {
		p, err := l.Acquire(t.Context(), "k", 1)
		require.NoError(t, err)
		p.Release()
	}
	calls, err := server.ScriptCalls()
	require.NoError(t, err)
	assert.Equal(t, int64(20), calls, "one script to acquire, one to release")
}

func TestAllocsPerPermit(t *testing.T) {
	// An acquire and its release allocate at most 10 times on the go-redis path, on one key
	// and over keys that change at each call: 2 commands (redis.NewCmd) and go-redis's
	// health check of each connection taken from its pool (3 each), 8 in all; the key's
	// string and its boxes are made once per key, the reply is a small integer (never
	// boxed), and a pooled lease carries the rest. The margin is sync.Pool's, which under
	// -race drops a quarter of what is put back.
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	l := newLimiter(t, client, distributed.WithTimeout(time.Second))
	keys := make([]string, 100)
	for i := range keys {
		keys[i] = "allocs-" + strconv.Itoa(i)
	}
	for _, tc := range []struct {
		name string
		keys []string
	}{{"one key", keys[:1]}, {"100 keys", keys}} {
		t.Run(tc.name, func(t *testing.T) {
			i := 0
			permit := func() {
				p, err := l.Acquire(t.Context(), tc.keys[i%len(tc.keys)], 1000)
				if err != nil {
					t.Fatal(err)
				}
				p.Release()
				i++
			}
			for range 2 * len(tc.keys) { // the keys' queues made, the connections dialled
				permit()
			}
			allocs := testing.AllocsPerRun(500, permit)
			assert.LessOrEqual(t, allocs, 10.0)
			t.Logf("%.2f allocations per acquire + release", allocs)
		})
	}
}

// BenchmarkAcquireRelease measures an uncontended permit on a Redis on loopback: two
// round trips, one script each.
func BenchmarkAcquireRelease(b *testing.B) {
	server := redistest.NewServer(b)
	client := newClient(b, server.Addr())
	// A bound well above a loaded test machine's stalls: this measures the round trips.
	l := newLimiter(b, client, distributed.WithTimeout(time.Second))
	ctx := b.Context()
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p, err := l.Acquire(ctx, "k", 1<<20)
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.SetParallelism(4) // 4 × GOMAXPROCS goroutines
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, err := l.Acquire(ctx, "k", 1<<20)
				if err != nil {
					b.Error(err)
					return
				}
				p.Release()
			}
		})
	})
	if n, err := client.ZCard(ctx, distributed.DefaultPrefix+"k").Result(); err != nil || n != 0 {
		b.Fatalf("permits left: %d, %v", n, err)
	}
}
