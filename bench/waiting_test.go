package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// BenchmarkConcurrencyWaiting compares ways a caller of the Redis concurrency limiter can
// wait for a permit: concurrency/distributed as it is ("ours": woken by its releases in
// process and by pub/sub across, the poll of 1 s a safety net; "ours-poll2ms" with a 2 ms
// poll beside the wake-ups), and a prototype written here ("pubsub": the release script
// PUBLISHes when it frees a permit, and each instance's one subscription wakes its longest
// waiter, which asks again; a waiter woken in vain, or never woken, asks again after 20 ms).
//
// Two instances (two limiters, two clients) share one key with max 4; goroutines callers,
// half on each, loop on acquire, hold the permit for 2 ms of work, release, and come back
// 2 ms later (so that a releasing caller does not take its permit straight back). The ideal is
// 4 permits every 2 ms (2,000/s). Reported: use% (the permits' held time over the time max
// permits could have been held: the share of capacity lost to waking late), wait-p50 and
// wait-p99 (from asking to holding), and scripts/permit (every EVALSHA and PUBLISH Redis
// ran, per permit: the load waiting puts on Redis).
//
//	cd bench && go test -run '^$' -bench 'ConcurrencyWaiting' -benchtime 2000x -count 1
func BenchmarkConcurrencyWaiting(b *testing.B) {
	const max, hold = 4, 2 * time.Millisecond
	srv := redistest.NewServer(b)
	pinRedis(b, srv)
	clients := [2]*redis.Client{newRedisClient(srv.Addr()), newRedisClient(srv.Addr())}
	for _, c := range clients {
		b.Cleanup(func() { c.Close() })
		warmPool(b, c)
	}
	type waiter interface {
		Acquire(ctx context.Context, key string, max int) (concurrency.Permit, error)
		Close() error
	}
	variants := []struct {
		name string
		open func(c *redis.Client) waiter
	}{
		{"ours", func(c *redis.Client) waiter { return mustDistributed(b, c) }},
		{"ours-poll2ms", func(c *redis.Client) waiter { return mustDistributed(b, c, distributed.WithPoll(2*time.Millisecond)) }},
		{"pubsub", func(c *redis.Client) waiter { return newPubSubWaiter(b, c) }},
	}
	for _, goroutines := range []int{16, 64} {
		for _, v := range variants {
			b.Run(v.name+"/"+strconv.Itoa(goroutines), func(b *testing.B) {
				instances := [2]waiter{v.open(clients[0]), v.open(clients[1])}
				defer func() {
					for _, w := range instances {
						w.Close()
					}
				}()
				var next atomic.Int64
				waits := make([][]time.Duration, goroutines)
				var failed atomic.Int64
				before := commandStats(b, srv)
				b.ResetTimer()
				start := time.Now()
				var wg sync.WaitGroup
				for g := range goroutines {
					wg.Go(func() {
						w := instances[g%2]
						for next.Add(1) <= int64(b.N) {
							t0 := time.Now()
							p, err := w.Acquire(context.Background(), "hot", max)
							if err != nil {
								failed.Add(1)
								continue
							}
							waits[g] = append(waits[g], time.Since(t0))
							time.Sleep(hold) // the work: what the permit is for
							p.Release()
							time.Sleep(hold) // the caller's next request comes later
						}
					})
				}
				wg.Wait()
				elapsed := time.Since(start)
				b.StopTimer()
				if n := failed.Load(); n > 0 {
					b.Fatalf("%d acquisitions failed", n)
				}
				after := commandStats(b, srv)
				all := slices.Concat(waits...)
				slices.Sort(all)
				permits := float64(len(all))
				scripts := float64(after["evalsha"].calls-before["evalsha"].calls) +
					float64(after["publish"].calls-before["publish"].calls)
				b.ReportMetric(100*permits*hold.Seconds()/(max*elapsed.Seconds()), "use%")
				b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "wait-p50-ms")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds())/1000, "wait-p99-ms")
				b.ReportMetric(scripts/permits, "scripts/permit")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

func mustDistributed(b *testing.B, c *redis.Client, opts ...distributed.Option) *distributed.Limiter {
	l, err := distributed.New(c, append(opts, distributed.WithTimeout(time.Second))...)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

// pubSubWaiter is the prototype of waiting by pub/sub, for one key: the permit scripts of
// concurrency/distributed, a release that publishes when it frees a permit, and one
// subscription per instance that wakes the instance's longest waiter.
type pubSubWaiter struct {
	client           *redis.Client
	acquire, release *redis.Script
	sub              *redis.PubSub
	id               string
	seq              atomic.Uint64
	done             chan struct{}

	mu      sync.Mutex
	waiters []chan struct{}
}

const wakeChannel = "ratelimit-bench-wake"

func newPubSubWaiter(b *testing.B, c *redis.Client) *pubSubWaiter {
	acquire, err := os.ReadFile("../concurrency/distributed/acquire.lua")
	if err != nil {
		b.Fatal(err)
	}
	w := &pubSubWaiter{
		client:  c,
		acquire: redis.NewScript(string(acquire)),
		release: redis.NewScript(`local n = redis.call('ZREM', KEYS[1], ARGV[1])
if n == 1 then redis.call('PUBLISH', ARGV[2], 1) end
return n`),
		sub:  c.Subscribe(context.Background(), wakeChannel),
		id:   strconv.FormatUint(rand.Uint64(), 16),
		done: make(chan struct{}),
	}
	// the subscription's confirmation
	if _, err := w.sub.Receive(context.Background()); err != nil {
		b.Fatal(err)
	}
	go w.dispatch()
	return w
}

// dispatch wakes the longest waiter on each message.
func (w *pubSubWaiter) dispatch() {
	defer close(w.done)
	for range w.sub.Channel() {
		w.mu.Lock()
		if len(w.waiters) > 0 {
			w.waiters[0] <- struct{}{}
			w.waiters = w.waiters[1:]
		}
		w.mu.Unlock()
	}
}

func (w *pubSubWaiter) Acquire(ctx context.Context, key string, max int) (concurrency.Permit, error) {
	for {
		// Join the queue before asking, so that a release between the two wakes this
		// caller rather than nobody.
		wake := make(chan struct{}, 1)
		w.mu.Lock()
		w.waiters = append(w.waiters, wake)
		w.mu.Unlock()
		id := w.id + ":" + strconv.FormatUint(w.seq.Add(1), 10)
		n, err := w.acquire.Run(ctx, w.client, []string{key}, max, int64(time.Minute/time.Microsecond), id).Int64()
		if err == nil && n > 0 { // granted
			w.leave(wake)
			return concurrency.NewPermit(&pubSubPermit{w: w, key: key, id: id}, 0), nil
		}
		if err != nil {
			w.leave(wake)
			return concurrency.Permit{}, err
		}
		t := time.NewTimer(10*time.Millisecond + rand.N(20*time.Millisecond))
		select {
		case <-wake:
		case <-t.C:
			w.leave(wake)
		case <-ctx.Done():
			w.leave(wake)
			t.Stop()
			return concurrency.Permit{}, ctx.Err()
		}
		t.Stop()
	}
}

// leave takes wake out of the queue, if it is still there.
func (w *pubSubWaiter) leave(wake chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i := slices.Index(w.waiters, wake); i >= 0 {
		w.waiters = slices.Delete(w.waiters, i, i+1)
	}
}

func (w *pubSubWaiter) Close() error {
	err := w.sub.Close()
	<-w.done
	return err
}

type pubSubPermit struct {
	w       *pubSubWaiter
	key, id string
}

func (p *pubSubPermit) ReleasePermit(uint64, concurrency.Outcome) {
	if err := p.w.release.Run(context.Background(), p.w.client, []string{p.key}, p.id, wakeChannel).Err(); err != nil {
		panic(fmt.Sprintf("bench: release: %v", err))
	}
}
