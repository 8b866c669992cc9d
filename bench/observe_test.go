package bench

import (
	"context"
	"sort"
	"strconv"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/otelmetrics"
)

// observed returns the contenders of the observation benchmarks: the local backend alone
// ("none"); the same wrapped by observe.Wrap reporting to an observer that does
// nothing ("noop": the cost of timing and reporting a decision); reporting to an
// otelmetrics.Observer on a real SDK MeterProvider, whose reader is never collected during
// the run, as built by default ("otel": one duration in 16 recorded in the histogram) and
// with every duration recorded ("otel-every": WithDurationSample(1), a histogram
// measurement on a precomputed attribute set per decision); and, for comparison, the
// other way to keep the histogram cheap ("buckets": counts and histogram buckets of its
// own, atomic counters exported through an asynchronous counter with an "le" attribute,
// which OpenTelemetry's readers see as a counter, not a histogram).
func observed() []contender {
	otel := func(opts ...otelmetrics.Option) func(b *testing.B, tr traffic) (take, func([]string) int) {
		return func(b *testing.B, tr traffic) (take, func([]string) int) {
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
			obs, err := otelmetrics.New(append([]otelmetrics.Option{otelmetrics.WithMeterProvider(mp)}, opts...)...)
			if err != nil {
				b.Fatal(err)
			}
			return openObserved(b, tr, obs)
		}
	}
	return []contender{
		{"none", openOurs},
		{"noop", func(b *testing.B, tr traffic) (take, func([]string) int) { return openObserved(b, tr, discard{}) }},
		{"otel", otel()},
		{"otel-every", otel(otelmetrics.WithDurationSample(1))},
		{"buckets", func(b *testing.B, tr traffic) (take, func([]string) int) {
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
			return openObserved(b, tr, newBucketObserver(b, mp))
		}},
	}
}

// bucketObserver counts decisions and their durations' histogram buckets in atomic
// counters of its own, one set per outcome, for one policy and backend, and reports them
// at each collection through one asynchronous counter with an "le" attribute.
type bucketObserver struct {
	counts [3][len(durationBounds) + 1]atomic.Int64 // [outcome][bucket]; the last is +Inf
}

// durationBounds are otelmetrics' bucket bounds, in seconds.
var durationBounds = [...]float64{0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25}

func newBucketObserver(b *testing.B, mp metric.MeterProvider) *bucketObserver {
	o := &bucketObserver{}
	meter := mp.Meter("bench")
	inst, err := meter.Int64ObservableCounter("ratelimit.decision.duration.buckets")
	if err != nil {
		b.Fatal(err)
	}
	var attrs [3][len(durationBounds) + 1]metric.ObserveOption
	for out := range attrs {
		for i := range attrs[out] {
			le := "+Inf"
			if i < len(durationBounds) {
				le = strconv.FormatFloat(durationBounds[i], 'g', -1, 64)
			}
			attrs[out][i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("ratelimit.result",
				observe.Outcome(out).String()), attribute.String("le", le)))
		}
	}
	_, err = meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		for out := range o.counts {
			for i := range o.counts[out] {
				obs.ObserveInt64(inst, o.counts[out][i].Load(), attrs[out][i])
			}
		}
		return nil
	}, inst)
	if err != nil {
		b.Fatal(err)
	}
	return o
}

func (o *bucketObserver) ObserveDecision(_ context.Context, d observe.Decision) {
	out := min(int(d.Outcome), 2)
	i := sort.SearchFloat64s(durationBounds[:], d.Duration.Seconds())
	o.counts[out][i].Add(1)
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
// decision (<name>-ns/op), what observing adds over none for each (<name>-extra-ns/op;
// extra-ns/op is otel's, otelmetrics as built by default), and each contender's
// allocations per decision, counted after the timer.
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
					if c > 0 {
						extra := float64((spent[c] - spent[0]).Nanoseconds()) / float64(b.N)
						b.ReportMetric(extra, cs[c].name+"-extra-ns/op")
						if cs[c].name == "otel" {
							b.ReportMetric(extra, "extra-ns/op")
						}
					}
				}
			})
		}
	}
}
