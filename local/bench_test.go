package local

import (
	"context"
	"strconv"
	"testing"

	"github.com/sluice-go/ratelimit"
)

// Limits that keep a benchmark on one path: a bucket that never empties, and one that is
// drained before the timer starts and refills one token in 1000 s.
var (
	benchAllow = ratelimit.Limit{Rate: 1e9, Burst: 1e9}
	benchDeny  = ratelimit.Limit{Rate: 1e-3, Burst: 1}
)

// benchKeys returns n IP-like keys.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
	}
	return keys
}

func BenchmarkAllow(b *testing.B) {
	for _, set := range []struct {
		name string
		keys []string
	}{{"hot", benchKeys(1)}, {"100k", benchKeys(100_000)}} {
		for _, traffic := range []struct {
			name  string
			limit ratelimit.Limit
		}{{"allow", benchAllow}, {"deny", benchDeny}} {
			prefix := set.name + "/" + traffic.name
			b.Run(prefix+"/serial", func(b *testing.B) {
				l := prepare(b, set.keys, traffic.limit)
				keys, limit, ctx := set.keys, traffic.limit, context.Background()
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
				checkPath(b, limit, allowed, b.N)
			})
			b.Run(prefix+"/parallel", func(b *testing.B) {
				l := prepare(b, set.keys, traffic.limit)
				keys, limit, ctx := set.keys, traffic.limit, context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					i := int(uint(len(keys)) / 2)
					for pb.Next() {
						res, _ := l.Allow(ctx, keys[i%len(keys)], limit)
						if res.Allowed != (limit == benchAllow) {
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

// prepare returns a limiter holding a bucket for every key, each already used once, so the
// timed loop measures lookups of existing buckets.
func prepare(b *testing.B, keys []string, limit ratelimit.Limit) *Limiter {
	b.Helper()
	l := New()
	b.Cleanup(func() { l.Close() })
	for _, k := range keys {
		if _, err := l.Allow(context.Background(), k, limit); err != nil {
			b.Fatal(err)
		}
	}
	if l.Len() != len(keys) {
		b.Fatalf("limiter holds %d buckets, want %d", l.Len(), len(keys))
	}
	return l
}

func checkPath(b *testing.B, limit ratelimit.Limit, allowed, n int) {
	if want := map[bool]int{true: n, false: 0}[limit == benchAllow]; allowed != want {
		b.Fatalf("%d of %d allowed, want %d", allowed, n, want)
	}
}
