package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// BenchmarkConcurrencyLocal measures an uncontended Acquire and Release of one key:
// concurrency.Local, with and without its adaptive limit, beside a buffered channel used as
// a semaphore ("chan"), the floor of an in-process permit: one send and one receive, with
// no key to find, no queue and no limit to read.
//
//	cd bench && go test -run '^$' -bench 'Concurrency' -benchmem -count 1
func BenchmarkConcurrencyLocal(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []concurrency.Option
	}{
		{"ours", nil},
		{"ours-adaptive", []concurrency.Option{concurrency.WithAdaptive(concurrency.AIMD{Initial: 10})}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l := concurrency.NewLocal(tc.opts...)
			defer l.Close()
			b.ReportAllocs()
			for b.Loop() {
				p, err := l.Acquire(ctx, "10.0.0.1", 10)
				if err != nil {
					b.Fatal(err)
				}
				p.Release()
			}
			if s := l.Stats(); s.Keys != 1 || s.InFlight != 0 {
				b.Fatalf("after the loop: %+v, want one key and no permit held", s)
			}
		})
	}
	b.Run("chan", func(b *testing.B) {
		sem := make(chan struct{}, 10)
		b.ReportAllocs()
		for b.Loop() {
			sem <- struct{}{}
			<-sem
		}
		if len(sem) != 0 {
			b.Fatalf("%d permits held after the loop", len(sem))
		}
	})
}

// BenchmarkConcurrencyRedis measures a permit on Redis (concurrency/distributed: one script
// to acquire, one to release) at 8 and 64 goroutines, beside a bare EVALSHA of a script
// that does nothing (the floor of one round trip), on one hot key and over 100,000 keys,
// on the client settings of BenchmarkRedis. Max is never reached: every call is admitted,
// and each call's latency is the permit's two round trips. Redis holds no permit after
// each run.
//
//	cd bench && go test -run '^$' -bench 'ConcurrencyRedis' -benchmem -count 1
func BenchmarkConcurrencyRedis(b *testing.B) {
	srv := redistest.NewServer(b)
	pinRedis(b, srv)
	client := newRedisClient(srv.Addr())
	b.Cleanup(func() { client.Close() })
	warmPool(b, client)
	ctx := context.Background()
	// A bound well above a loaded machine's stalls: this measures the round trips.
	l, err := distributed.New(client, distributed.WithTimeout(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	permit := func(key string) (bool, error) {
		p, err := l.Acquire(ctx, key, 1<<20)
		if err != nil {
			return false, err
		}
		p.Release()
		return true, nil
	}
	contenders := []struct {
		name   string
		decide take
	}{{"ours", permit}, {"evalsha", openEvalSHA(b, client, redisTraffic{})}}
	for _, set := range []struct {
		name string
		keys []string
	}{{"hot", ipKeys(1)}, {"100k", ipKeys(100_000)}} {
		for _, g := range []int{8, 64} {
			for _, c := range contenders {
				b.Run(c.name+"/"+set.name+"/"+strconv.Itoa(g), func(b *testing.B) {
					if allowed, failed := spread(8, set.keys[:min(len(set.keys), 1000)], c.decide); failed != 0 || allowed == 0 {
						b.Fatalf("first calls: %d admitted, %d failed", allowed, failed) // and the scripts are loaded
					}
					runRedisLoad(b, srv, g, set.keys, true, c.decide)
					if n := dbSize(b, srv); n != 0 {
						b.Fatalf("Redis holds %d keys after the run, want none: a permit was not released", n)
					}
				})
			}
		}
	}
}
