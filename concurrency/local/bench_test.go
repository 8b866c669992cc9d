package local_test

import (
	"fmt"
	"testing"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/local"
)

// BenchmarkAcquireRelease measures an uncontended Acquire and Release of one key, the path
// every request of a lightly loaded key takes.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, adaptive := range []bool{false, true} {
		b.Run(fmt.Sprintf("adaptive=%v", adaptive), func(b *testing.B) {
			var opts []local.Option
			if adaptive {
				opts = append(opts, local.WithAdaptive(concurrency.AIMD{Initial: 10}))
			}
			l := local.New(opts...)
			defer l.Close()
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				p, err := l.Acquire(ctx, "k", 10)
				if err != nil {
					b.Fatal(err)
				}
				p.Release()
			}
			if limit, ok := l.Limit("k"); !ok || limit < 1 {
				b.Fatalf("the key was not used: limit %d, %v", limit, ok)
			}
		})
	}
}

// BenchmarkAcquireReleaseParallel spreads goroutines over 1,024 keys with room for all,
// and then over one hot key whose max is the goroutines' count.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	keys := make([]string, 1024)
	for i := range keys {
		keys[i] = fmt.Sprint("key", i)
	}
	for _, tc := range []struct {
		name string
		keys []string
	}{{"keys=1024", keys}, {"keys=1", keys[:1]}} {
		b.Run(tc.name, func(b *testing.B) {
			l := local.New()
			defer l.Close()
			ctx := b.Context()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					p, err := l.Acquire(ctx, tc.keys[i%len(tc.keys)], 1<<20)
					if err != nil {
						b.Fatal(err)
					}
					p.Release()
					i++
				}
			})
		})
	}
}

// BenchmarkStats measures a snapshot of 100,000 idle keys, what a metrics scrape costs.
func BenchmarkStats(b *testing.B) {
	l := local.New()
	defer l.Close()
	ctx := b.Context()
	for i := range 100_000 {
		p, err := l.Acquire(ctx, fmt.Sprint("key", i), 10)
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
	b.ReportAllocs()
	for b.Loop() {
		if s := l.Stats(); s.Keys != 100_000 {
			b.Fatalf("%d keys tracked, want 100,000", s.Keys)
		}
	}
}
