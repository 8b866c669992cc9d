package bench

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/distributed"
	"github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// BenchmarkConcurrencyLocal measures an uncontended Acquire and Release of one key:
// local.Limiter, with and without its adaptive limit, beside a buffered channel used as
// a semaphore ("chan"), the floor of an in-process permit: one send and one receive, with
// no key to find, no queue and no limit to read.
//
//	cd bench && go test -run '^$' -bench 'Concurrency' -benchmem -count 1
func BenchmarkConcurrencyLocal(b *testing.B) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []local.Option
	}{
		{"ours", nil},
		{"ours-adaptive", []local.Option{local.WithAdaptive(concurrency.AIMD{Initial: 10})}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l := local.New(tc.opts...)
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
// to acquire, one to release) at 1, 8 and 64 goroutines, beside two bare EVALSHA calls of a
// script that does nothing ("2evalsha", the floor of a permit's two round trips), on one
// hot key and over 10,000 keys, on the client settings of BenchmarkRedis. Max is never
// reached: every call is admitted, and each call's latency is the permit's two round trips.
// Redis holds no permit after each run.
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
	evalsha := openEvalSHA(b, client, redisTraffic{})
	twice := func(key string) (bool, error) {
		if ok, err := evalsha(key); !ok || err != nil {
			return ok, err
		}
		return evalsha(key)
	}
	contenders := []struct {
		name   string
		decide take
	}{{"ours", permit}, {"2evalsha", twice}}
	for _, set := range []struct {
		name string
		keys []string
	}{{"hot", ipKeys(1)}, {"10k", ipKeys(10_000)}} {
		for _, g := range []int{1, 8, 64} {
			for _, c := range contenders {
				b.Run(c.name+"/"+set.name+"/"+strconv.Itoa(g), func(b *testing.B) {
					if allowed, failed := spread(8, set.keys[:min(len(set.keys), 1000)], c.decide); failed != 0 || allowed == 0 {
						// and the scripts are loaded
						b.Fatalf("first calls: %d admitted, %d failed", allowed, failed)
					}
					runRedisLoad(b, srv, g, set.keys, true, c.decide)
					// The one key left is the fleet's count of limiters
					// (distributed.DefaultPrefix).
					if n, err := client.Exists(ctx, distributed.DefaultPrefix).Result(); err != nil || dbSize(b, srv) != n {
						b.Fatalf("Redis holds %d keys after the run, want only the fleet's: a permit was not released (%v)", dbSize(b, srv), err)
					}
				})
			}
		}
	}
}

// BenchmarkConcurrencyRedisTurns sets ours against the floor of BenchmarkConcurrencyRedis
// (two bare EVALSHA) at 64 goroutines on one key, in alternating rounds (each goroutine makes
// turnCalls calls per round, all started together, the round timed to the last one's end),
// so that both meet the same load within a fraction of a second. It reports each one's
// ops/s, ours/floor (the median of the rounds' throughput ratios: ≥ 0.8 is the aim), and,
// from INFO, the Redis calls per grant in ours' rounds (the clients': EVALSHA, EVAL, SCRIPT),
// the commands its scripts ran per grant, and Redis's CPU µs (used_cpu_user + used_cpu_sys)
// per grant and per pair of the floor's calls. Pinned, one run:
//
//	cd bench && taskset -c 1 go test -run '^$' -bench 'ConcurrencyRedisTurns' \
//		-benchtime 128000x -count 1 -args -redis-cpu 0
func BenchmarkConcurrencyRedisTurns(b *testing.B) {
	const goroutines, turnCalls = 64, 50
	srv := redistest.NewServer(b)
	pinRedis(b, srv)
	client := newRedisClient(srv.Addr())
	b.Cleanup(func() { client.Close() })
	warmPool(b, client)
	ctx := context.Background()
	l, err := distributed.New(client, distributed.WithTimeout(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	evalsha := openEvalSHA(b, client, redisTraffic{})
	decide := [2]take{
		func(key string) (bool, error) {
			p, err := l.Acquire(ctx, key, 1<<20)
			if err != nil {
				return false, err
			}
			p.Release()
			return true, nil
		},
		func(key string) (bool, error) {
			if ok, err := evalsha(key); !ok || err != nil {
				return ok, err
			}
			return evalsha(key)
		},
	}
	for _, d := range decide {
		if allowed, failed := spread(8, ipKeys(1), d); failed != 0 || allowed == 0 {
			b.Fatalf("first calls: %d admitted, %d failed", allowed, failed)
		}
	}
	// The client sends scripts only (and SCRIPT LOAD after a NOSCRIPT): every other command
	// counted ran inside them.
	redisWork := func() (calls, inner int64, cpu time.Duration) {
		for name, st := range commandStats(b, srv) {
			switch name {
			case "info":
			case "evalsha", "eval", "script":
				calls += st.calls
			default:
				inner += st.calls
			}
		}
		return calls, inner, readServerStats(b, srv, false).cpu
	}
	key := ipKeys(1)[0]
	var spent [2]time.Duration
	var done [2]int64
	var failed atomic.Int64
	var ratios []float64
	var calls, inner int64
	var cpu [2]time.Duration
	b.ResetTimer()
	for n := 0; n < b.N; n += goroutines * turnCalls {
		var took [2]time.Duration
		for c, d := range decide {
			calls0, inner0, cpu0 := redisWork()
			start := time.Now()
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					for range turnCalls {
						if ok, err := d(key); !ok || err != nil {
							failed.Add(1)
						}
					}
				})
			}
			wg.Wait()
			took[c] = time.Since(start)
			spent[c] += took[c]
			done[c] += goroutines * turnCalls
			calls1, inner1, cpu1 := redisWork()
			cpu[c] += cpu1 - cpu0
			if c == 0 {
				calls, inner = calls+calls1-calls0, inner+inner1-inner0
			}
		}
		ratios = append(ratios, float64(took[1])/float64(took[0])) // ours ops/s ÷ the floor's
	}
	b.StopTimer()
	if f := failed.Load(); f != 0 {
		b.Fatalf("%d calls failed or were refused", f)
	}
	slices.Sort(ratios)
	b.ReportMetric(float64(done[0])/spent[0].Seconds(), "ours-ops/s")
	b.ReportMetric(float64(done[1])/spent[1].Seconds(), "floor-ops/s")
	b.ReportMetric(ratios[len(ratios)/2], "ours/floor")
	b.ReportMetric(float64(calls)/float64(done[0]), "redis-calls/grant")
	b.ReportMetric(float64(inner)/float64(done[0]), "script-cmds/grant")
	b.ReportMetric(cpu[0].Seconds()*1e6/float64(done[0]), "redis-cpu-us/grant")
	b.ReportMetric(cpu[1].Seconds()*1e6/float64(done[1]), "floor-redis-cpu-us/op")
}

// BenchmarkConcurrencyWakeup measures the wake-up latency across processes: limiter A
// releases the only permit of a key (max 1) that limiter B, on its own connections as
// another process would be, waits for; the time from A's release to B's grant, p50 and p99,
// with the Redis calls per hand-over counted by Redis (INFO commandstats: the clients'
// scripts; an op is A's acquire and release, B's refusal, grant and release). B's poll is an
// hour: only the wake-up can hand the permit on.
//
//	cd bench && go test -run '^$' -bench 'ConcurrencyWakeup' -benchmem -count 1
func BenchmarkConcurrencyWakeup(b *testing.B) {
	srv := redistest.NewServer(b)
	pinRedis(b, srv)
	ctx := context.Background()
	open := func() *distributed.Limiter {
		client := newRedisClient(srv.Addr())
		b.Cleanup(func() { client.Close() })
		l, err := distributed.New(client, distributed.WithTimeout(time.Second), distributed.WithPoll(time.Hour))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		return l
	}
	a, w := open(), open()
	lats := make([]time.Duration, 0, b.N)
	calls := func() int64 {
		reply, err := srv.Do("INFO", "commandstats")
		if err != nil {
			b.Fatal(err)
		}
		var n int64
		for _, line := range strings.Split(reply.(string), "\r\n") {
			for _, cmd := range []string{"cmdstat_evalsha:", "cmdstat_eval:"} {
				if rest, ok := strings.CutPrefix(line, cmd+"calls="); ok {
					v, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
					n += v
				}
			}
		}
		return n
	}
	start := calls()
	b.ReportAllocs()
	for b.Loop() {
		p, err := a.Acquire(ctx, "wake", 1)
		if err != nil {
			b.Fatal(err)
		}
		got := make(chan time.Time)
		go func() {
			q, err := w.Acquire(ctx, "wake", 1)
			if err != nil {
				b.Error(err)
			}
			got <- time.Now()
			q.Release()
		}()
		for w.Stats().Waiting == 0 {
			runtime.Gosched()
		}
		t0 := time.Now()
		p.Release()
		lats = append(lats, (<-got).Sub(t0))
	}
	b.StopTimer()
	slices.Sort(lats)
	b.ReportMetric(float64(lats[len(lats)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lats[len(lats)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(calls()-start)/float64(len(lats)), "redis-calls/op")
}
