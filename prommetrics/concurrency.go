package prommetrics

import (
	"fmt"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/observe"
)

// The gauges of WithConcurrency, named and described as the OpenTelemetry exporter names
// otelmetrics' ratelimit.concurrency.* instruments.
var (
	concurrencyLabels = []string{"ratelimit_policy"}
	limitMinDesc      = prometheus.NewDesc("ratelimit_concurrency_limit_min",
		"The lowest concurrency limit in force among a policy's keys.", concurrencyLabels, nil)
	limitMaxDesc = prometheus.NewDesc("ratelimit_concurrency_limit_max",
		"The highest concurrency limit in force among a policy's keys.", concurrencyLabels, nil)
	inFlightDesc = prometheus.NewDesc("ratelimit_concurrency_in_flight",
		"Concurrency permits granted and not yet released.", concurrencyLabels, nil)
	waitingDesc = prometheus.NewDesc("ratelimit_concurrency_waiting",
		"Callers waiting for a concurrency permit.", concurrencyLabels, nil)
	keysDesc = prometheus.NewDesc("ratelimit_concurrency_keys",
		"Keys a concurrency limiter tracks.", concurrencyLabels, nil)
)

// concurrencySource is a concurrency limiter whose permits the ratelimit_concurrency_*
// gauges report, under a policy name.
type concurrencySource struct {
	policy string
	stats  concurrency.StatsReporter
}

// WithConcurrency reports the permits of a concurrency limiter (any backend of package
// concurrency), on the ratelimit_concurrency_* gauges at each scrape, with
// ratelimit_policy = policy: the limit in force (its lowest and highest among the
// limiter's keys: ratelimit_concurrency_limit_min and _max, while it tracks a key), the
// permits in flight, the callers waiting and the keys tracked. The figures aggregate every
// key of the limiter: none is reported per key. It may be given once per policy name (New
// panics on a second); l.Stats must be safe for concurrent use. A nil l is skipped.
// Default: no ratelimit_concurrency_* series.
func WithConcurrency(policy string, l concurrency.StatsReporter) Option {
	return func(o *options) {
		if l != nil {
			o.concurrency = append(o.concurrency, concurrencySource{observe.ValidName(policy), l})
		}
	}
}

// checkConcurrency panics when a policy is given twice: its series would collide at
// every scrape.
func checkConcurrency(sources []concurrencySource) {
	seen := make(map[string]bool, len(sources))
	for _, s := range sources {
		if seen[s.policy] {
			panic(fmt.Sprintf("prommetrics: New: WithConcurrency given twice for policy %q", s.policy))
		}
		seen[s.policy] = true
	}
}

// collectConcurrency sends the gauges of every WithConcurrency limiter.
func collectConcurrency(ch chan<- prometheus.Metric, sources []concurrencySource) {
	gauge := func(d *prometheus.Desc, v int, policy string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), policy)
	}
	for _, s := range sources {
		st := s.stats.Stats()
		if st.Keys > 0 { // no key, no limit in force
			gauge(limitMinDesc, st.MinLimit, s.policy)
			gauge(limitMaxDesc, st.MaxLimit, s.policy)
		}
		gauge(inFlightDesc, st.InFlight, s.policy)
		gauge(waitingDesc, st.Waiting, s.policy)
		gauge(keysDesc, st.Keys, s.policy)
	}
}

// The counter of concurrency limits' decisions, as otelmetrics names it.
var (
	permitsDesc = prometheus.NewDesc("ratelimit_concurrency_requests_total",
		"Concurrency-limit decisions, by policy and result: a permit granted, refused, or not decided.",
		[]string{"ratelimit_policy", "ratelimit_result"}, nil)
	permitErrorsDesc = prometheus.NewDesc("ratelimit_concurrency_requests_total",
		"Concurrency-limit decisions, by policy and result: a permit granted, refused, or not decided.",
		[]string{"error_type", "ratelimit_policy", "ratelimit_result"}, nil)
)

// permitCounters holds the counts of one (policy, backend) pair's concurrency decisions
// (observe.Decision.Concurrency).
type permitCounters struct {
	policy string
	cells  [observe.NumCells]atomic.Int64 // by observe.CellOf, of the outcome alone
}

// observePermit counts d, a concurrency limit's decision.
func (c *Collector) observePermit(d observe.Decision) {
	c.permits.Lookup(d.Policy, d.Backend).cells[observe.PermitCellOf(d)].Add(1)
}

// collectPermits sends the counts of concurrency decisions, summed by policy.
func (c *Collector) collectPermits(ch chan<- prometheus.Metric) {
	collectOutcomes(ch, c.permits, permitsDesc, permitErrorsDesc)
}

// collectOutcomes sends the counts of series by outcome, summed by policy, on desc, or on
// errDesc for errors.
func collectOutcomes(ch chan<- prometheus.Metric, series *observe.Series[permitCounters], desc, errDesc *prometheus.Desc) {
	byPolicy := make(map[string]*[observe.NumCells]int64)
	series.All(func(s *permitCounters) {
		sum := byPolicy[s.policy]
		if sum == nil {
			sum = new([observe.NumCells]int64)
			byPolicy[s.policy] = sum
		}
		for i := range s.cells {
			sum[i] += s.cells[i].Load()
		}
	})
	for policy, sum := range byPolicy {
		for i, n := range sum {
			if n == 0 {
				continue
			}
			cell := observe.CellAt(i)
			if cell.Outcome == observe.OutcomeError {
				ch <- prometheus.MustNewConstMetric(errDesc, prometheus.CounterValue, float64(n),
					observe.ErrorType(cell.Kind), policy, cell.Outcome.String())
			} else {
				ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(n),
					policy, cell.Outcome.String())
			}
		}
	}
}
