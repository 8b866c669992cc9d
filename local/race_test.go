package local

import (
	"context"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestDecisionsRaceDrops: goroutines decide on a few hot keys, without a lock (AllowN, and
// AllowAll on two of them, which holds both buckets), while another
// sweeps (dropping every bucket it finds full) as fast as it can and a third creates buckets
// for fresh keys, which rehashes the tables under the readers. The clock moves in steps,
// between which the workers pause; at each step some buckets have refilled and are dropped,
// before the workers start or under their feet.
//
// A decision that landed on a bucket as it was dropped would lose its token, and the key's
// next bucket would start full: the key would get more than its limit allows. So the
// tokens admitted at each step, played in order on a fresh limiter that never drops
// anything, must all be admitted there too. (All of a step's decisions come at one instant,
// where the order of admissions changes nothing.)
func TestDecisionsRaceDrops(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	cases := []struct {
		name  string
		alg   ratelimit.Algorithm
		limit ratelimit.Limit
		steps []time.Duration // the clock moves by one of these, in turn
	}{
		{"TokenBucket", ratelimit.TokenBucket, ratelimit.Limit{Rate: 1, Burst: 3}, []time.Duration{0, 500 * ms, s, 3 * s, 0, 10 * s}},
		{"TokenBucket/fast", ratelimit.TokenBucket, ratelimit.Limit{Rate: 2e6, Burst: 3}, []time.Duration{0, time.Microsecond, 2 * time.Microsecond, 0, 10 * time.Microsecond}},
		{"TokenBucket/faster", ratelimit.TokenBucket, ratelimit.Limit{Rate: 2e9, Burst: 3000}, []time.Duration{0, time.Microsecond, 2 * time.Microsecond, 0, 10 * time.Microsecond}},
		{"FixedWindow", ratelimit.FixedWindow, ratelimit.Limit{Rate: 1, Burst: 3}, []time.Duration{0, s, 3 * s, 0, 7 * s}},
		{"SlidingWindowCounter", ratelimit.SlidingWindowCounter, ratelimit.Limit{Rate: 1, Burst: 3}, []time.Duration{0, s, 3 * s, 7 * s, 0, 13 * s}},
		{"SlidingWindowLog", ratelimit.SlidingWindowLog, ratelimit.Limit{Rate: 1, Burst: 3}, []time.Duration{0, s, 3 * s, 0, 7 * s}},
		{"LeakyBucket", ratelimit.LeakyBucket, ratelimit.Limit{Rate: 1, Burst: 3}, []time.Duration{0, 500 * ms, s, 3 * s, 0, 10 * s}},
	}
	const workers, keys, tries, rounds = 4, 3, 8, 300
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := ratelimittest.NewClock()
			l := New(WithClock(clock.Now), WithCleanupInterval(-1), WithAlgorithm(c.alg))
			defer l.Close()
			ctx := context.Background()

			var stop atomic.Bool
			var sweeps atomic.Int64
			var background sync.WaitGroup
			background.Go(func() { // the sweeper
				for !stop.Load() {
					l.store.sweep(l.micros())
					sweeps.Add(1)
				}
			})
			background.Go(func() { // fresh keys, another limit, so that tables grow and rehash
				other := ratelimit.Limit{Rate: 1e6, Burst: 1}
				for i := 0; !stop.Load(); i++ {
					_, err := l.Allow(ctx, "fresh-"+strconv.Itoa(i), other)
					require.NoError(t, err)
				}
			})

			// admitted[r][k]: requests admitted at round r on key k.
			admitted := make([][keys]int, rounds)
			at := make([]time.Time, rounds)
			var last [keys]*bucket
			replaced := 0 // hot buckets found replaced by a new one after a round
			for r := range rounds {
				clock.Advance(c.steps[r%len(c.steps)])
				at[r] = clock.Now()
				if r%3 == 0 {
					// Let a whole sweep see the new time, so that full buckets are surely
					// dropped; in the other rounds the workers race the sweeper.
					for seen := sweeps.Load(); sweeps.Load() < seen+2; {
						runtime.Gosched()
					}
				}
				var mu sync.Mutex
				var wg sync.WaitGroup
				for w := range workers {
					wg.Go(func() {
						var mine [keys]int
						for i := range tries * keys {
							k := (i + w) % keys
							if i%2 == 1 { // a token from two buckets at once
								k2 := (k + 1) % keys
								mr, err := l.AllowAll(ctx, []ratelimit.Request{
									{Key: "hot-" + strconv.Itoa(k), Limit: c.limit},
									{Key: "hot-" + strconv.Itoa(k2), Limit: c.limit},
								})
								require.NoError(t, err)
								if mr.Allowed {
									mine[k]++
									mine[k2]++
								}
								continue
							}
							res, err := l.Allow(ctx, "hot-"+strconv.Itoa(k), c.limit)
							require.NoError(t, err)
							if res.Allowed {
								mine[k]++
							}
						}
						mu.Lock()
						for k := range keys {
							admitted[r][k] += mine[k]
						}
						mu.Unlock()
					})
				}
				wg.Wait()
				for k := range keys {
					if b := hotBucket(l, "hot-"+strconv.Itoa(k), c.limit); b != last[k] {
						if last[k] != nil {
							replaced++
						}
						last[k] = b
					}
				}
			}
			stop.Store(true)
			background.Wait()
			require.Positive(t, replaced, "no hot bucket was dropped: the test tested nothing")

			refClock := ratelimittest.NewClock()
			ref := New(WithClock(refClock.Now), WithCleanupInterval(-1), WithAlgorithm(c.alg))
			defer ref.Close()
			total := 0
			for r := range rounds {
				refClock.Advance(at[r].Sub(refClock.Now()))
				for k := range keys {
					for i := range admitted[r][k] {
						res, err := ref.Allow(ctx, "hot-"+strconv.Itoa(k), c.limit)
						require.NoError(t, err)
						require.True(t, res.Allowed, "round %d, key %d: request %d of %d admitted under drops, denied without", r, k, i+1, admitted[r][k])
						total++
					}
				}
			}
			t.Logf("%d requests admitted; hot buckets replaced %d times", total, replaced)
		})
	}
}

// hotBucket returns the bucket of (key, limit) in l, or nil.
func hotBucket(l *Limiter, key string, limit ratelimit.Limit) *bucket {
	h := l.store.hash(key, &limit)
	sh := &l.store.shards[h&(numShards-1)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.tab.Load().find(h, key, limit.Rate, kindOf(args.Resolve(limit, l.algorithm)))
}
