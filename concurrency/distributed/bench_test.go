package distributed_test

import (
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
