package bench

import (
	"context"
	"net/netip"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sethvargo/go-limiter"
	"github.com/sethvargo/go-limiter/memorystore"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
)

// traffic is one kind of load: every timed call allowed, or every timed call denied.
type traffic struct {
	name  string
	allow bool // whether every timed call must be allowed (else every one must be denied)
	// limit is the limit of ours and seed (floor's is its own, per traffic).
	limit ratelimit.Limit
	// tokens per interval is sethvargo's limit, set per store.
	tokens   uint64
	interval time.Duration
}

// traffics returns the two kinds of load.
//
// allow: 10⁹ tokens refilled at 10⁹/s never run out in a run of a few seconds. sethvargo gets
// 2⁶² tokens per 24 h rather than 10⁹ per second because its memorystore does not refill in
// proportion to time: at each interval tick it resets a bucket to ticks×interval/tokens
// tokens (interval in ns), which for 10⁹ per second is 1 token, and every call after the
// first tick would be denied. No tick comes in a day, so the bucket only drains, by one token
// a call, from 2⁶².
//
// deny: a burst of 1, taken before the timer, that refills in 1000 s (one hour for
// sethvargo): every timed call is denied.
func traffics() []traffic {
	return []traffic{
		{name: "allow", allow: true, limit: ratelimit.Limit{Rate: 1e9, Burst: 1e9}, tokens: 1 << 62, interval: 24 * time.Hour},
		{name: "deny", allow: false, limit: ratelimit.Limit{Rate: 1e-3, Burst: 1}, tokens: 1, interval: time.Hour},
	}
}

// take makes one decision for key: allowed or not, or an error if no decision was made.
type take func(key string) (bool, error)

// contender is one limiter under test. open builds a fresh one with tr's limit, closed at
// b's cleanup, and returns its decision function and a function that counts how many of keys
// have a bucket.
type contender struct {
	name string
	open func(b *testing.B, tr traffic) (take, func(keys []string) int)
}

func contenders() []contender {
	return []contender{
		{"ours", openOurs},
		{"sethvargo", openSethvargo},
		{"seed", openSeed},
		{"floor", openFloor},
	}
}

func openOurs(b *testing.B, tr traffic) (take, func([]string) int) {
	l := local.New()
	b.Cleanup(func() { l.Close() })
	ctx, limit := context.Background(), tr.limit
	decide := func(key string) (bool, error) {
		res, err := l.Allow(ctx, key, limit)
		return res.Allowed, err
	}
	return decide, func([]string) int { return l.Len() }
}

func openSethvargo(b *testing.B, tr traffic) (take, func([]string) int) {
	store, err := memorystore.New(&memorystore.Config{Tokens: tr.tokens, Interval: tr.interval})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Cleanup(func() { store.Close(ctx) })
	decide := func(key string) (bool, error) {
		_, _, _, ok, err := store.Take(ctx, key)
		return ok, err
	}
	return decide, func(keys []string) int { return sethvargoBuckets(store, keys) }
}

// sethvargoBuckets counts the keys the store holds a bucket for: it has no Len, but Get
// reports a limit of 0 tokens for a key it does not hold.
func sethvargoBuckets(store limiter.Store, keys []string) int {
	n := 0
	for _, k := range keys {
		if tokens, _, err := store.Get(context.Background(), k); err == nil && tokens > 0 {
			n++
		}
	}
	return n
}

func openSeed(_ *testing.B, tr traffic) (take, func([]string) int) {
	s := &seedLimiter{}
	limit := tr.limit
	decide := func(key string) (bool, error) { return s.allowN(key, limit, 1) }
	return decide, func([]string) int { return s.len() }
}

func openFloor(_ *testing.B, tr traffic) (take, func([]string) int) {
	f := newFloorLimiter(tr.allow)
	return f.take, func(keys []string) int { return len(keys) }
}

// ipKeys returns n distinct client-IP-like keys: 10.0.0.0, 10.0.0.1, …
func ipKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String()
	}
	return keys
}

// prepare opens c for tr and uses every key once, so that every bucket exists and, under
// deny traffic, is drained before the timer starts. It fails b unless the limiter then
// holds exactly one bucket per key.
func prepare(b *testing.B, c contender, tr traffic, keys []string) take {
	b.Helper()
	decide, buckets := c.open(b, tr)
	for _, k := range keys {
		// A new bucket is full: the first call is allowed under either traffic.
		if ok, err := decide(k); err != nil || !ok {
			b.Fatalf("first call on %q: allowed %v, error %v", k, ok, err)
		}
	}
	if got := buckets(keys); got != len(keys) {
		b.Fatalf("%d buckets after using %d keys", got, len(keys))
	}
	return decide
}

// checkPath fails b if the timed calls strayed from tr's path.
// interleaved makes b.N decisions with each of decide, on keys in turn, the contenders taking
// turns in blocks of block decisions timed one by one, so that all of them meet the same load
// within a block; it stops the timer, checks that each took tr's path, and returns each one's
// time.
func interleaved(b *testing.B, tr traffic, decide []take, keys []string, block int) []time.Duration {
	spent := make([]time.Duration, len(decide))
	allowed, failed, k := make([]int64, len(decide)), make([]int64, len(decide)), make([]int, len(decide))
	for done := 0; done < b.N; done += block {
		n := min(block, b.N-done)
		for c := range decide {
			start := time.Now()
			for range n {
				ok, err := decide[c](keys[k[c]])
				switch {
				case err != nil:
					failed[c]++
				case ok:
					allowed[c]++
				}
				if k[c]++; k[c] == len(keys) {
					k[c] = 0
				}
			}
			spent[c] += time.Since(start)
		}
	}
	b.StopTimer()
	for c := range decide {
		checkPath(b, tr, int64(b.N), allowed[c], failed[c])
	}
	return spent
}

func checkPath(b *testing.B, tr traffic, calls, allowed, failed int64) {
	b.Helper()
	want := int64(0)
	if tr.allow {
		want = calls
	}
	if failed != 0 || allowed != want {
		b.Fatalf("%s traffic: %d of %d calls allowed, %d errors; want %d allowed, no errors",
			tr.name, allowed, calls, failed, want)
	}
}

// startAt spreads goroutine id's starting point over n keys (Fibonacci hashing), so that
// parallel goroutines do not walk the keys in lockstep.
func startAt(id uint64, n int) int {
	return int((id * 0x9E3779B97F4A7C15 >> 32) % uint64(n))
}

// keySet is a scenario's keys: one hot key, or 100,000 keys walked in turn.
type keySet struct {
	name string
	keys []string
}

// keySets returns the two key sets every in-process benchmark runs on.
func keySets() []keySet {
	return []keySet{{"hot", ipKeys(1)}, {"100k", ipKeys(100_000)}}
}

func BenchmarkAllow(b *testing.B) {
	sets := keySets()
	for _, c := range contenders() {
		for _, set := range sets {
			for _, tr := range traffics() {
				keys := set.keys
				prefix := c.name + "/" + set.name + "/" + tr.name
				b.Run(prefix+"/serial", func(b *testing.B) {
					allowed, failed := decideSerial(b, prepare(b, c, tr, keys), keys)
					checkPath(b, tr, int64(b.N), allowed, failed)
				})
				b.Run(prefix+"/parallel", func(b *testing.B) {
					decide := prepare(b, c, tr, keys)
					allowed, failed := decideParallel(b, decide, keys)
					checkPath(b, tr, int64(b.N), allowed, failed)
				})
			}
		}
	}
}

// memoryBuckets is how many idle buckets BenchmarkMemory creates.
const memoryBuckets = 1_000_000

// BenchmarkMemory reports the heap each contender holds per idle bucket, at 1,000,000
// buckets, as B/bucket: the live heap after creating the buckets (one call on each of 10⁶
// keys) less the live heap before, over 10⁶. The keys are built before the first reading,
// so their bytes are not counted, except where a contender copies them (seed formats a key
// of its own for each bucket: that copy is its cost).
//
// The measurement is made once, on the benchmark's first round; later rounds only report its
// figure again. The iteration count printed beside it therefore means nothing, ns/op is
// suppressed, and B/op and allocs/op (which -benchmem always prints) are set to 0 so that
// every contender's line reads the same whichever round the framework printed.
func BenchmarkMemory(b *testing.B) {
	keys := ipKeys(memoryBuckets)
	limit := ratelimit.PerSecond(10)
	fills := []struct {
		name string
		// fill builds the contender, uses every key once, checks it holds a bucket for each,
		// and returns the limiter (to keep alive) and a function that closes it.
		fill func(b *testing.B) (any, func())
	}{
		{"ours", func(b *testing.B) (any, func()) {
			l := local.New(local.WithMaxBuckets(2 * memoryBuckets))
			for _, k := range keys {
				if _, err := l.Allow(context.Background(), k, limit); err != nil {
					b.Fatal(err)
				}
			}
			if l.Len() != len(keys) {
				b.Fatalf("ours holds %d buckets, want %d", l.Len(), len(keys))
			}
			return l, func() { l.Close() }
		}},
		{"sethvargo", func(b *testing.B) (any, func()) {
			store, err := memorystore.New(&memorystore.Config{Tokens: uint64(limit.Burst), Interval: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			for _, k := range keys {
				if _, _, _, _, err := store.Take(context.Background(), k); err != nil {
					b.Fatal(err)
				}
			}
			if n := sethvargoBuckets(store, keys); n != len(keys) {
				b.Fatalf("sethvargo holds %d buckets, want %d", n, len(keys))
			}
			return store, func() { store.Close(context.Background()) }
		}},
		{"seed", func(b *testing.B) (any, func()) {
			s := &seedLimiter{}
			for _, k := range keys {
				if _, err := s.allowN(k, limit, 1); err != nil {
					b.Fatal(err)
				}
			}
			if s.len() != len(keys) {
				b.Fatalf("seed holds %d buckets, want %d", s.len(), len(keys))
			}
			return s, func() {}
		}},
	}
	for _, f := range fills {
		perBucket := 0.0 // measured on the first round, reported on every round
		b.Run(f.name, func(b *testing.B) {
			if perBucket == 0 {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				l, closeLimiter := f.fill(b)
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(l)
				closeLimiter()
				perBucket = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(len(keys))
			}
			b.ReportMetric(perBucket, "B/bucket")
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(0, "B/op")
			b.ReportMetric(0, "allocs/op")
		})
	}
	runtime.KeepAlive(keys)
}

// decideSerial runs decide b.N times over keys, in order, on one goroutine, and returns how
// many calls were allowed and how many failed. Allocations are reported and only the loop is
// timed.
func decideSerial(b *testing.B, decide take, keys []string) (allowed, failed int64) {
	b.ReportAllocs()
	b.ResetTimer()
	for i, k := 0, 0; i < b.N; i++ {
		ok, err := decide(keys[k])
		switch {
		case err != nil:
			failed++
		case ok:
			allowed++
		}
		if k++; k == len(keys) {
			k = 0
		}
	}
	b.StopTimer()
	return allowed, failed
}

// decideParallel runs decide over keys on b.RunParallel's goroutines, each starting at a
// different key, and returns how many calls were allowed and how many failed. Allocations
// are reported and only the loop is timed.
func decideParallel(b *testing.B, decide take, keys []string) (allowed, failed int64) {
	var nAllowed, nFailed, goroutines atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		k := startAt(uint64(goroutines.Add(1)), len(keys))
		var a, f int64
		for pb.Next() {
			ok, err := decide(keys[k])
			switch {
			case err != nil:
				f++
			case ok:
				a++
			}
			if k++; k == len(keys) {
				k = 0
			}
		}
		nAllowed.Add(a)
		nFailed.Add(f)
	})
	b.StopTimer()
	return nAllowed.Load(), nFailed.Load()
}
