package bench

import (
	"context"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/otelmetrics"
)

// observed returns the contenders of the observation benchmarks: the local backend alone
// ("none"), and the same wrapped by ratelimit.Observe reporting to an otelmetrics.Observer
// on a real SDK MeterProvider ("otel"), whose reader is never collected during the run.
func observed() []contender {
	return []contender{
		{"none", openOurs},
		{"otel", openObserved},
	}
}

func openObserved(b *testing.B, tr traffic) (take, func([]string) int) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	obs, err := otelmetrics.New(otelmetrics.WithMeterProvider(mp))
	if err != nil {
		b.Fatal(err)
	}
	l := local.New()
	b.Cleanup(func() { l.Close() })
	o := ratelimit.Observe(l, obs, "api")
	ctx, limit := context.Background(), tr.limit
	decide := func(key string) (bool, error) {
		res, err := o.Allow(ctx, key, limit)
		return res.Allowed, err
	}
	return decide, func([]string) int { return l.Len() }
}

// BenchmarkObserve/<none|otel>/<keys>/<traffic>/<mode>: BenchmarkAllow's scenarios for the
// local backend, unobserved and observed.
func BenchmarkObserve(b *testing.B) {
	keySets := []struct {
		name string
		keys []string
	}{{"hot", ipKeys(1)}, {"100k", ipKeys(100_000)}}
	for _, c := range observed() {
		for _, set := range keySets {
			for _, tr := range traffics() {
				for _, mode := range []string{"serial", "parallel"} {
					b.Run(c.name+"/"+set.name+"/"+tr.name+"/"+mode, func(b *testing.B) {
						decide := prepare(b, c, tr, set.keys)
						var allowed, failed int64
						if mode == "serial" {
							allowed, failed = decideSerial(b, decide, set.keys)
						} else {
							allowed, failed = decideParallel(b, decide, set.keys)
						}
						checkPath(b, tr, int64(b.N), allowed, failed)
					})
				}
			}
		}
	}
}

// BenchmarkObserveCost/<keys>/<traffic>: the serial scenarios of BenchmarkObserve, each op
// one decision by each contender in alternating, separately timed blocks of 1,000, which a
// busy machine disturbs far less than separate runs. It reports none-ns/op, otel-ns/op,
// their difference extra-ns/op, and each contender's allocations per decision
// (none-allocs/op, otel-allocs/op), counted after the timer.
func BenchmarkObserveCost(b *testing.B) {
	const block = 1000
	keySets := []struct {
		name string
		keys []string
	}{{"hot", ipKeys(1)}, {"100k", ipKeys(100_000)}}
	for _, set := range keySets {
		for _, tr := range traffics() {
			b.Run(set.name+"/"+tr.name, func(b *testing.B) {
				keys := set.keys
				cs := observed()
				var decide [2]take
				for c := range cs {
					decide[c] = prepare(b, cs[c], tr, keys)
				}
				var spent [2]time.Duration
				var allowed, failed [2]int64
				k := [2]int{}
				b.ResetTimer()
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
				var allocs [2]float64
				for c := range decide {
					i := 0
					allocs[c] = testing.AllocsPerRun(1000, func() {
						if _, err := decide[c](keys[i]); err != nil {
							b.Fatal(err)
						}
						if i++; i == len(keys) {
							i = 0
						}
					})
				}
				none, otel := float64(spent[0].Nanoseconds())/float64(b.N), float64(spent[1].Nanoseconds())/float64(b.N)
				b.ReportMetric(none, "none-ns/op")
				b.ReportMetric(otel, "otel-ns/op")
				b.ReportMetric(otel-none, "extra-ns/op")
				b.ReportMetric(allocs[0], "none-allocs/op")
				b.ReportMetric(allocs[1], "otel-allocs/op")
			})
		}
	}
}
