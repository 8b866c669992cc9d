package local

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// benchTraffic is one kind of load: every timed call allowed, or every timed call denied.
type benchTraffic struct {
	name  string
	allow bool
	limit ratelimit.Limit
}

// benchTraffics returns the loads for an algorithm. allow: a limit no run exhausts, 10⁹ per
// second (W = 1 s for the window algorithms) — except for the sliding log, whose Burst is
// capped (args.MaxLogBurst): 10⁴ per µs, a window of 1 µs that no goroutine can fill
// with 10⁴ requests — and for the leaky bucket, whose Rate is capped at 10⁶ per second: a
// queue of 10⁹ places drained at that rate. deny: a burst of 1,
// taken before the timer, that comes back only after 10⁶ s (11.6 days; the window
// algorithms' windows are that long, and aligned to the epoch, so a run crosses a window's
// end once in several thousand).
func benchTraffics(a ratelimit.Algorithm) []benchTraffic {
	open := ratelimit.Limit{Rate: 1e9, Burst: 1e9}
	switch a {
	case ratelimit.SlidingWindowLog:
		open = ratelimit.Limit{Rate: 1e10, Burst: args.MaxLogBurst}
	case ratelimit.LeakyBucket:
		open = ratelimit.Limit{Rate: 1e6, Burst: 1e9}
	}
	return []benchTraffic{
		{"allow", true, open},
		{"deny", false, ratelimit.Limit{Rate: 1e-6, Burst: 1}},
	}
}

// benchAlgorithms are all the algorithms; BenchmarkAllow skips those this backend does not
// implement.
var benchAlgorithms = []ratelimit.Algorithm{
	ratelimit.TokenBucket, ratelimit.FixedWindow, ratelimit.SlidingWindowLog,
	ratelimit.SlidingWindowCounter, ratelimit.LeakyBucket,
}

// benchKeys returns n IP-like keys.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
	}
	return keys
}

// BenchmarkAllow/<algorithm>/<keys>/<traffic>/<mode>: one decision per op, on one key (hot)
// or walking 100,000 (100k), every call allowed or every call denied, from one goroutine
// (serial) or b.RunParallel's (parallel).
func BenchmarkAllow(b *testing.B) {
	sets := []struct {
		name string
		keys []string
	}{{"hot", benchKeys(1)}, {"100k", benchKeys(100_000)}}
	for _, alg := range benchAlgorithms {
		for _, set := range sets {
			for _, tr := range benchTraffics(alg) {
				prefix := alg.String() + "/" + set.name + "/" + tr.name
				b.Run(prefix+"/serial", func(b *testing.B) {
					l := prepare(b, alg, set.keys, tr.limit)
					keys, limit, ctx := set.keys, tr.limit, context.Background()
					b.ReportAllocs()
					b.ResetTimer()
					allowed := 0
					for i := 0; i < b.N; i++ {
						res, _ := l.Allow(ctx, keys[i%len(keys)], limit)
						if res.Allowed {
							allowed++
						}
					}
					b.StopTimer()
					if want := map[bool]int{true: b.N}[tr.allow]; allowed != want {
						b.Fatalf("%d of %d allowed, want %d", allowed, b.N, want)
					}
				})
				b.Run(prefix+"/parallel", func(b *testing.B) {
					l := prepare(b, alg, set.keys, tr.limit)
					keys, limit, ctx := set.keys, tr.limit, context.Background()
					b.ReportAllocs()
					b.ResetTimer()
					b.RunParallel(func(pb *testing.PB) {
						i := int(uint(len(keys)) / 2)
						for pb.Next() {
							res, _ := l.Allow(ctx, keys[i%len(keys)], limit)
							if res.Allowed != tr.allow {
								b.Error("left the benchmark's path")
								return
							}
							i++
						}
					})
				})
			}
		}
	}
}

// prepare returns a limiter running alg holding a bucket for every key, each already used
// once, so the timed loop measures lookups of existing buckets. It skips b if the backend
// does not implement alg.
func prepare(b *testing.B, alg ratelimit.Algorithm, keys []string, limit ratelimit.Limit) *Limiter {
	b.Helper()
	l := New(WithAlgorithm(alg))
	b.Cleanup(func() { l.Close() })
	for _, k := range keys {
		_, err := l.Allow(context.Background(), k, limit)
		if errors.Is(err, ratelimit.ErrNotSupported) {
			b.Skipf("%v is not implemented by the local backend", alg)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if l.Len() != len(keys) {
		b.Fatalf("limiter holds %d buckets, want %d", l.Len(), len(keys))
	}
	return l
}

// BenchmarkAllowAllInto: three token buckets of one client decided together, allowed, into a
// reused slice of Results (bench/multi_test.go compares it with AllowN).
func BenchmarkAllowAllInto(b *testing.B) {
	l := New()
	b.Cleanup(func() { l.Close() })
	ctx := context.Background()
	reqs := []ratelimit.Request{
		{Key: "{user:42}:second", Limit: ratelimit.Limit{Rate: 1e3, Burst: 1 << 40}},
		{Key: "{user:42}:minute", Limit: ratelimit.Limit{Rate: 1e3, Burst: 1 << 39}},
		{Key: "{user:42}:hour", Limit: ratelimit.Limit{Rate: 1e3, Burst: 1 << 38}},
	}
	results := make([]ratelimit.Result, len(reqs))
	b.ReportAllocs()
	for b.Loop() {
		if mr, err := l.AllowAllInto(ctx, reqs, results); err != nil || !mr.Allowed {
			b.Fatal(mr, err)
		}
	}
}

// BenchmarkAllowKeepUsage: one key, admitted, under a limit with KeepUsage (its bucket under
// its mutex) and the same limit without (one compare-and-swap).
func BenchmarkAllowKeepUsage(b *testing.B) {
	for _, keep := range []bool{false, true} {
		b.Run(map[bool]string{false: "plain", true: "keep"}[keep], func(b *testing.B) {
			l := New(WithCleanupInterval(-1))
			b.Cleanup(func() { _ = l.Close() })
			limit := ratelimit.Limit{Rate: 1e6, Burst: 1e9, KeepUsage: keep}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res, _ := l.Allow(ctx, "k", limit); !res.Allowed {
					b.Fatal("denied")
				}
			}
		})
	}
}
