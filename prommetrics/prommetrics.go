package prommetrics

import (
	"context"
	"math"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/observe"
)

// durationBuckets are the upper bounds, in seconds, of the buckets of
// ratelimit_decision_duration_seconds: 10 µs to 250 ms, as in otelmetrics.
var durationBuckets = [...]float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
}

// The descriptors of the metrics, with the help texts of otelmetrics' instruments.
var (
	requestsDesc = prometheus.NewDesc("ratelimit_requests_total",
		"Rate-limiting decisions, by policy and result.",
		[]string{"ratelimit_policy", "ratelimit_priority", "ratelimit_result", "ratelimit_shadow"}, nil)
	errorsDesc = prometheus.NewDesc("ratelimit_requests_total",
		"Rate-limiting decisions, by policy and result.",
		[]string{"error_type", "ratelimit_policy", "ratelimit_priority", "ratelimit_result", "ratelimit_shadow"}, nil)
	durationDesc = prometheus.NewDesc("ratelimit_decision_duration_seconds",
		"How long the limiter took to decide, by policy, backend and result.",
		[]string{"ratelimit_backend", "ratelimit_policy", "ratelimit_result"}, nil)
	transitionsDesc = prometheus.NewDesc("ratelimit_fallback_transitions_total",
		"Changes of state of the fallback circuit breaker.",
		[]string{"ratelimit_fallback_from", "ratelimit_fallback_to"}, nil)
	cacheHitsDesc = prometheus.NewDesc("ratelimit_denial_cache_hits_total",
		"Denials answered by the fallback denial cache without asking the backend.",
		[]string{"ratelimit_policy"}, nil)
	bucketsDesc = prometheus.NewDesc("ratelimit_buckets",
		"Buckets held by a limiter.",
		[]string{"ratelimit_backend"}, nil)
)

// Collector is a prometheus.Collector that is also an observe.Observer: it counts the
// decisions it is told of, and the circuit breaker's transitions given to ObserveBreaker,
// and exports them when scraped. It is safe for concurrent use.
type Collector struct {
	buckets     []bucketSource
	concurrency []concurrencySource
	series      *observe.Series[counters]
	permits     *observe.Series[permitCounters] // concurrency limits' decisions
	grants      *observe.Series[permitCounters] // package lease's grants
	settles     *observe.Series[permitCounters] // settles (see settle.go)
	reserves    *observe.Series[permitCounters] // bookings ahead
	amounts     *observe.Series[amounts]        // their tokens and delays

	transMu     sync.Mutex
	transitions map[[2]string]int64
}

var (
	_ prometheus.Collector = (*Collector)(nil)
	_ observe.Observer     = (*Collector)(nil)
)

// counters holds the counts of one (policy, backend) pair.
type counters struct {
	policy, backend string
	cells           [observe.NumCells]atomic.Int64 // by observe.CellOf
	cacheHits       atomic.Int64
	duration        [3]histogram // [allowed, denied, error]
}

// histogram counts observations in the buckets of durationBuckets, and one more for +Inf.
// The count is the sum of the buckets, so that a scrape during decisions is consistent.
type histogram struct {
	counts [len(durationBuckets) + 1]atomic.Uint64
	sum    atomic.Uint64 // math.Float64bits of the sum
}

func (h *histogram) observe(v float64) {
	h.counts[sort.SearchFloat64s(durationBuckets[:], v)].Add(1)
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// New returns a Collector. Register it with a prometheus.Registerer to export what it
// observes.
func New(opts ...Option) *Collector {
	cfg := defaultOptions()
	for _, opt := range opts {
		opt(&cfg)
	}
	checkConcurrency(cfg.concurrency)
	return &Collector{
		buckets:     cfg.buckets,
		concurrency: cfg.concurrency,
		series: observe.NewSeries(cfg.maxSeries, func(policy, backend string) *counters {
			return &counters{policy: policy, backend: backend}
		}),
		permits: observe.NewSeries(cfg.maxSeries, func(policy, _ string) *permitCounters {
			return &permitCounters{policy: policy}
		}),
		grants: observe.NewSeries(cfg.maxSeries, func(policy, _ string) *permitCounters {
			return &permitCounters{policy: policy}
		}),
		settles: observe.NewSeries(cfg.maxSeries, func(policy, _ string) *permitCounters {
			return &permitCounters{policy: policy}
		}),
		reserves: observe.NewSeries(cfg.maxSeries, func(policy, _ string) *permitCounters {
			return &permitCounters{policy: policy}
		}),
		amounts: observe.NewSeries(cfg.maxSeries, func(policy, _ string) *amounts {
			return &amounts{policy: policy}
		}),
		transitions: make(map[[2]string]int64),
	}
}

// ObserveDecision counts d. It allocates nothing once the pair (d.Policy, d.Backend) has
// been seen, unless a name is not valid UTF-8.
func (c *Collector) ObserveDecision(_ context.Context, d observe.Decision) {
	switch {
	case d.Concurrency:
		c.observePermit(d)
		return
	case d.Lease:
		c.grants.Lookup(d.Policy, d.Backend).cells[observe.PermitCellOf(d)].Add(1)
		return
	case d.Settle || d.Reserve:
		c.observeSettle(d)
		return
	}
	s := c.series.Lookup(d.Policy, d.Backend)
	cell, out := observe.CellOf(d)
	s.cells[cell].Add(1)
	if d.Cached {
		s.cacheHits.Add(1)
	}
	s.duration[out].observe(d.Duration.Seconds())
}

// ObserveBreaker counts t. Pass it to fallback.WithStateHook.
func (c *Collector) ObserveBreaker(t fallback.StateChange) {
	c.transMu.Lock()
	defer c.transMu.Unlock()
	c.transitions[[2]string{t.From.String(), t.To.String()}]++
}

// Describe sends nothing: the Collector is unchecked (see the package documentation).
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series that has counted something.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	// The counts of decisions are per policy, kept per (policy, backend): add up the
	// backends of each policy.
	byPolicy := make(map[string]*counts)
	add := func(s *counters) {
		sum := byPolicy[s.policy]
		if sum == nil {
			sum = &counts{}
			byPolicy[s.policy] = sum
		}
		sum.add(s)
		s.collectDuration(ch)
	}
	c.series.All(add)
	for policy, sum := range byPolicy {
		sum.collect(ch, policy)
	}

	c.transMu.Lock()
	for k, n := range c.transitions {
		ch <- prometheus.MustNewConstMetric(transitionsDesc, prometheus.CounterValue, float64(n), k[0], k[1])
	}
	c.transMu.Unlock()

	for _, b := range c.buckets {
		ch <- prometheus.MustNewConstMetric(bucketsDesc, prometheus.GaugeValue, float64(b.count()), b.backend)
	}
	collectConcurrency(ch, c.concurrency)
	c.collectPermits(ch)
	collectOutcomes(ch, c.grants, grantsDesc, grantErrorsDesc)
	c.collectSettles(ch)
}

// counts are the counts of a policy's decisions, summed over its backends.
type counts struct {
	cells     [observe.NumCells]int64
	cacheHits int64
}

func (c *counts) add(s *counters) {
	for i := range c.cells {
		c.cells[i] += s.cells[i].Load()
	}
	c.cacheHits += s.cacheHits.Load()
}

func (c *counts) collect(ch chan<- prometheus.Metric, policy string) {
	for i, n := range c.cells {
		if n == 0 {
			continue
		}
		cell := observe.CellAt(i)
		prio, out, shadow := cell.Priority.String(), cell.Outcome.String(), strconv.FormatBool(cell.Shadow)
		if cell.Outcome == observe.OutcomeError {
			ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(n),
				observe.ErrorType(cell.Kind), policy, prio, out, shadow)
		} else {
			ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(n), policy, prio, out, shadow)
		}
	}
	if c.cacheHits > 0 {
		ch <- prometheus.MustNewConstMetric(cacheHitsDesc, prometheus.CounterValue, float64(c.cacheHits), policy)
	}
}

func (s *counters) collectDuration(ch chan<- prometheus.Metric) {
	for out := range s.duration {
		h := &s.duration[out]
		cumulative := make(map[float64]uint64, len(durationBuckets))
		var count uint64
		for i := range h.counts {
			count += h.counts[i].Load()
			if i < len(durationBuckets) {
				cumulative[durationBuckets[i]] = count
			}
		}
		if count == 0 {
			continue
		}
		ch <- prometheus.MustNewConstHistogram(durationDesc, count, math.Float64frombits(h.sum.Load()), cumulative,
			s.backend, s.policy, observe.Outcome(out).String())
	}
}
