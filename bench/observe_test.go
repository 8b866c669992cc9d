package bench

import (
	"context"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/otelmetrics"
)

// observed returns the contenders of the observation benchmarks: the local backend alone
// ("none"); the same wrapped by observe.Wrap reporting to an observer that does
// nothing ("noop": the cost of timing and reporting a decision); and reporting to an
// otelmetrics.Observer on a real SDK MeterProvider ("otel"), whose reader is never
// collected during the run.
func observed() []contender {
	return []contender{
		{"none", openOurs},
		{"noop", func(b *testing.B, tr traffic) (take, func([]string) int) { return openObserved(b, tr, discard{}) }},
		{"otel", func(b *testing.B, tr traffic) (take, func([]string) int) {
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
			obs, err := otelmetrics.New(otelmetrics.WithMeterProvider(mp))
			if err != nil {
				b.Fatal(err)
			}
			return openObserved(b, tr, obs)
		}},
	}
}

// discard is an Observer that does nothing.
type discard struct{}

func (discard) ObserveDecision(context.Context, observe.Decision) {}

func openObserved(b *testing.B, tr traffic, obs observe.Observer) (take, func([]string) int) {
	l := local.New()
	b.Cleanup(func() { l.Close() })
	o := observe.Wrap(l, obs, "api")
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
	sets := keySets()
	for _, c := range observed() {
		for _, set := range sets {
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
// busy machine disturbs far less than separate runs. It reports each contender's ns per
// decision (none-ns/op, noop-ns/op, otel-ns/op), what observing through otelmetrics adds
// (extra-ns/op: otel less none), and each contender's allocations per decision, counted
// after the timer.
func BenchmarkObserveCost(b *testing.B) {
	const block = 1000
	sets := keySets()
	for _, set := range sets {
		for _, tr := range traffics() {
			b.Run(set.name+"/"+tr.name, func(b *testing.B) {
				keys := set.keys
				cs := observed()
				decide := make([]take, len(cs))
				for c := range cs {
					decide[c] = prepare(b, cs[c], tr, keys)
				}
				b.ResetTimer()
				spent := interleaved(b, tr, decide, keys, block)
				for c := range decide {
					i := 0
					allocs := testing.AllocsPerRun(1000, func() {
						if _, err := decide[c](keys[i]); err != nil {
							b.Fatal(err)
						}
						if i++; i == len(keys) {
							i = 0
						}
					})
					b.ReportMetric(float64(spent[c].Nanoseconds())/float64(b.N), cs[c].name+"-ns/op")
					b.ReportMetric(allocs, cs[c].name+"-allocs/op")
				}
				b.ReportMetric(float64((spent[2]-spent[0]).Nanoseconds())/float64(b.N), "extra-ns/op")
			})
		}
	}
}
