package bench

import (
	"context"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/go-chi/httprate"
	"github.com/sethvargo/go-limiter/memorystore"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
)

// The garbage collector's share of the local limiters: the heap each holds per key, and the
// GC CPU time its requests cost.

// gcCPU returns the CPU time the garbage collector has spent so far, as runtime/metrics
// estimates it (summed at the end of each cycle): in all, and without the idle mark workers,
// which only take a CPU nothing else wants, so that their time follows the machine's load;
// and the cycles completed.
func gcCPU() (total, busy time.Duration, cycles uint64) {
	s := []metrics.Sample{
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/gc/mark/idle:cpu-seconds"},
		{Name: "/gc/cycles/total:gc-cycles"},
	}
	metrics.Read(s)
	total = time.Duration(s[0].Value.Float64() * 1e9)
	return total, total - time.Duration(s[1].Value.Float64()*1e9), s[2].Value.Uint64()
}

// scanHeap returns the heap the last cycle had to scan for pointers, in bytes.
func scanHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkHeaderKeyGC/<allow|deny>/<middleware>: BenchmarkHeaderKey's requests (10,000
// users, every bucket made before the timer), one middleware per process heap: it reports
// the GC CPU time per request (gc-ns/op, from runtime/metrics' /cpu/classes/gc; busy-ns/op
// without the idle mark workers), GC cycles per 10⁶ requests, and the heap a cycle scans for
// pointers (scan-MB; the handler alone's is the requests'). The other middlewares are built
// in their own sub-benchmarks, after this one's are dropped, so that each one's collections
// mark only its own heap; with -count, the rounds interleave them.
func BenchmarkHeaderKeyGC(b *testing.B) {
	reqs := headerRequests()
	for _, allow := range []bool{true, false} {
		for _, m := range headerMiddlewares() {
			if m.wrap == nil && !allow {
				continue // the handler alone denies nothing
			}
			b.Run(trafficName(allow)+"/"+m.name, func(b *testing.B) {
				serve, want := openHeader(b, m, allow, reqs), wantStatus(allow)
				for i := range len(reqs) {
					serve(i)
				}
				runtime.GC()
				scan := scanHeap()
				cpu0, busy0, cycles0 := gcCPU()
				b.ReportAllocs()
				b.ResetTimer()
				i := 0
				for range b.N {
					if got := serve(i); got != want {
						b.Fatalf("status %d, want %d", got, want)
					}
					if i++; i == len(reqs) {
						i = 0
					}
				}
				b.StopTimer()
				cpu1, busy1, cycles1 := gcCPU()
				b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "gc-ns/op")
				b.ReportMetric(float64((busy1-busy0).Nanoseconds())/float64(b.N), "busy-ns/op")
				b.ReportMetric(float64(scan)/1e6, "scan-MB")
				b.ReportMetric(float64(cycles1-cycles0)*1e6/float64(b.N), "cycles/1M")
			})
		}
	}
}

// BenchmarkMemoryKeys/<keys>/<contender> reports the live heap each contender holds per key,
// idle, at 10⁴, 10⁶ and 10⁷ keys, as B/key: as BenchmarkMemory (measured on the first round,
// the keys built before the first reading), beside sethvargo's memorystore and httprate's
// local counter (a map from a key's 64-bit hash to a count: it never compares the key).
func BenchmarkMemoryKeys(b *testing.B) {
	limit := ratelimit.PerSecond(10)
	ctx := context.Background()
	fills := []struct {
		name string
		fill func(b *testing.B, keys []string) (any, func())
	}{
		{"ours", func(b *testing.B, keys []string) (any, func()) {
			l := local.New(local.WithMaxBuckets(2 * len(keys)))
			for _, k := range keys {
				if _, err := l.Allow(ctx, k, limit); err != nil {
					b.Fatal(err)
				}
			}
			if l.Len() != len(keys) {
				b.Fatalf("ours holds %d buckets, want %d", l.Len(), len(keys))
			}
			return l, func() { l.Close() }
		}},
		{"sethvargo", func(b *testing.B, keys []string) (any, func()) {
			store, err := memorystore.New(&memorystore.Config{Tokens: uint64(limit.Burst), Interval: time.Second})
			if err != nil {
				b.Fatal(err)
			}
			for _, k := range keys {
				if _, _, _, _, err := store.Take(ctx, k); err != nil {
					b.Fatal(err)
				}
			}
			return store, func() { store.Close(ctx) }
		}},
		{"httprate", func(b *testing.B, keys []string) (any, func()) {
			c := httprate.NewLocalLimitCounter(time.Second)
			now := time.Now().Truncate(time.Second)
			for _, k := range keys {
				if err := c.IncrementBy(k, now, 1); err != nil {
					b.Fatal(err)
				}
			}
			return c, func() {}
		}},
	}
	for _, n := range []int{10_000, 1_000_000, 10_000_000} {
		keys := ipKeys(n)
		for _, f := range fills {
			perKey := 0.0
			b.Run(keyCount(n)+"/"+f.name, func(b *testing.B) {
				if perKey == 0 {
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					l, closeLimiter := f.fill(b, keys)
					runtime.GC()
					runtime.ReadMemStats(&after)
					runtime.KeepAlive(l)
					closeLimiter()
					perKey = (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / float64(n)
				}
				b.ReportMetric(perKey, "B/key")
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(0, "B/op")
				b.ReportMetric(0, "allocs/op")
			})
		}
		runtime.KeepAlive(keys)
	}
}

// keyCount names n keys: 10k, 1M, 10M.
func keyCount(n int) string {
	switch {
	case n >= 1_000_000:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1_000:
		return strconv.Itoa(n/1_000) + "k"
	}
	return strconv.Itoa(n)
}
