package otelmetrics

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/nilarg"
	"github.com/sluice-go/ratelimit/observe"
)

// ScopeName is the instrumentation scope of the Observer's meter.
const ScopeName = "github.com/sluice-go/ratelimit/otelmetrics"

// durationBuckets are the bounds, in seconds, of the buckets of ratelimit.decision.duration:
// from 10 µs (a local decision takes about 0.1 µs, a denial-cache hit under 1 µs) through
// the tens of µs of a Redis round trip on a LAN, up to 250 ms (far past any limiter's
// deadline: distributed's default is 50 ms).
var durationBuckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
}

// Names of the attributes. Their values are names fixed by configuration (policies,
// backends) or taken from small fixed sets; never a key.
const (
	attrPolicy    = "ratelimit.policy"
	attrPriority  = "ratelimit.priority"
	attrResult    = "ratelimit.result"
	attrShadow    = "ratelimit.shadow"
	attrErrorType = "error.type"
	attrBackend   = "ratelimit.backend"
	attrFrom      = "ratelimit.fallback.from"
	attrTo        = "ratelimit.fallback.to"
)

// Observer is an observe.Observer that records decisions, and the breaker transitions
// given to ObserveBreaker, on OpenTelemetry instruments; see the package documentation for
// the instruments. It is safe for concurrent use.
//
// The counts of decisions and denial-cache hits are kept by the Observer itself, one atomic
// counter per series, and reported at each collection through asynchronous counters: the
// SDK's synchronous instruments resolve their attributes on every call, which costs a few
// hundred nanoseconds a measurement, while an atomic add costs a few. The duration, a
// histogram (OpenTelemetry has no asynchronous one), records a sample of the decisions: the
// Observer is an observe.DurationSampler (see WithDurationSample).
type Observer struct {
	requests    metric.Int64ObservableCounter
	cacheHits   metric.Int64ObservableCounter
	duration    metric.Float64Histogram
	transitions metric.Int64Counter

	series *observe.Series[counters]
	states map[[2]fallback.State]metric.AddOption // the attributes of the known transitions
	sample int                                    // WithDurationSample

	// permitRequests counts concurrency limits' decisions, kept in permits: see
	// registerPermits.
	permitRequests metric.Int64ObservableCounter
	permits        *observe.Series[permitCounters]
	// grants counts package lease's grants (observe.Decision.Lease): see lease.go.
	grantCalls metric.Int64ObservableCounter
	grants     *observe.Series[permitCounters]
	// settles, reserves and amounts count settles and bookings ahead: see settle.go.
	settleCalls, reserveCalls metric.Int64ObservableCounter
	settles, reserves         *observe.Series[permitCounters]
	amounts                   *observe.Series[amounts]
}

var (
	_ observe.DurationSampler = (*Observer)(nil)
)

// counters holds the counts of one (policy, backend) pair and their attribute sets, made
// once, so that recording a decision allocates nothing.
type counters struct {
	policy    string
	cells     [observe.NumCells]counter // by observe.CellOf
	cacheHits counter
	duration  [3][]metric.RecordOption // [allowed, denied, error]
}

// counter is a count and the attributes it is reported with.
type counter struct {
	n     atomic.Int64
	attrs metric.ObserveOption
}

// New returns an Observer whose instruments come from the MeterProvider of
// WithMeterProvider (default: the global one). It fails if the provider refuses to make an
// instrument, or if WithMeterProvider or WithConcurrency was given a nil of some type (a
// (*sdkmetric.MeterProvider)(nil)), which would panic at the first collection.
func New(opts ...Option) (*Observer, error) {
	cfg := defaultOptions()
	for _, opt := range opts {
		opt(&cfg)
	}
	if nilarg.Typed(cfg.provider) {
		return nil, fmt.Errorf("otelmetrics: New: WithMeterProvider: a nil %T", cfg.provider)
	}
	for _, c := range cfg.concurrency {
		if nilarg.Is(c.stats) {
			return nil, fmt.Errorf("otelmetrics: New: WithConcurrency: a nil %T", c.stats)
		}
	}
	mp := cfg.provider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	meter := mp.Meter(ScopeName)

	o := &Observer{series: observe.NewSeries(cfg.maxSeries, newCounters), sample: cfg.sample}
	o.states = make(map[[2]fallback.State]metric.AddOption)
	for _, from := range []fallback.State{fallback.Closed, fallback.Open, fallback.HalfOpen} {
		for _, to := range []fallback.State{fallback.Closed, fallback.Open, fallback.HalfOpen} {
			o.states[[2]fallback.State{from, to}] = transitionOption(from.String(), to.String())
		}
	}

	var errs [10]error
	o.requests, errs[0] = meter.Int64ObservableCounter("ratelimit.requests",
		metric.WithUnit("{request}"),
		metric.WithDescription("Rate-limiting decisions, by policy and result."))
	o.duration, errs[1] = meter.Float64Histogram("ratelimit.decision.duration",
		metric.WithUnit("s"),
		metric.WithDescription("How long the limiter took to decide, by policy, backend and result."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	o.transitions, errs[2] = meter.Int64Counter("ratelimit.fallback.transitions",
		metric.WithUnit("{transition}"),
		metric.WithDescription("Changes of state of the fallback circuit breaker."))
	o.cacheHits, errs[3] = meter.Int64ObservableCounter("ratelimit.denial_cache.hits",
		metric.WithUnit("{request}"),
		metric.WithDescription("Denials answered by the fallback denial cache without asking the backend."))
	if errs[0] == nil && errs[3] == nil {
		_, errs[4] = meter.RegisterCallback(o.report, o.requests, o.cacheHits)
	}
	errs[5] = registerBuckets(meter, cfg.buckets)
	errs[6] = registerConcurrency(meter, cfg.concurrency)
	errs[7] = o.registerPermits(meter, cfg.maxSeries)
	errs[8] = o.registerGrants(meter, cfg.maxSeries)
	errs[9] = o.registerSettles(meter, cfg.maxSeries)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return o, nil
}

// report reports the counts of every policy. They are kept per (policy, backend), so the
// backends of each policy are added up first.
func (o *Observer) report(_ context.Context, obs metric.Observer) error {
	byPolicy := make(map[string]*counts)
	add := func(s *counters) {
		sum := byPolicy[s.policy]
		if sum == nil {
			sum = &counts{series: s}
			byPolicy[s.policy] = sum
		}
		sum.add(s)
	}
	o.series.All(add)
	for _, sum := range byPolicy {
		sum.report(obs, o.requests, o.cacheHits)
	}
	return nil
}

// counts are the counts of a policy's decisions, summed over its backends, and a series of
// the policy for their attributes.
type counts struct {
	series    *counters
	cells     [observe.NumCells]int64
	cacheHits int64
}

func (c *counts) add(s *counters) {
	for i := range c.cells {
		c.cells[i] += s.cells[i].n.Load()
	}
	c.cacheHits += s.cacheHits.n.Load()
}

// report reports each count that is not zero: a series appears with its first decision,
// as it would on a synchronous counter.
func (c *counts) report(obs metric.Observer, requests, cacheHits metric.Int64Observable) {
	observe := func(inst metric.Int64Observable, n int64, attrs metric.ObserveOption) {
		if n > 0 {
			obs.ObserveInt64(inst, n, attrs)
		}
	}
	for i, n := range c.cells {
		observe(requests, n, c.series.cells[i].attrs)
	}
	observe(cacheHits, c.cacheHits, c.series.cacheHits.attrs)
}

// registerBuckets makes the ratelimit.buckets instrument, when there is a source for it.
func registerBuckets(meter metric.Meter, sources []bucketSource) error {
	if len(sources) == 0 {
		return nil
	}
	gauge, err := meter.Int64ObservableUpDownCounter("ratelimit.buckets",
		metric.WithUnit("{bucket}"),
		metric.WithDescription("Buckets held by a limiter."))
	if err != nil {
		return err
	}
	attrs := make([]metric.ObserveOption, len(sources))
	for i, s := range sources {
		attrs[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String(attrBackend, s.backend)))
	}
	_, err = meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		for i, s := range sources {
			obs.ObserveInt64(gauge, int64(s.count()), attrs[i])
		}
		return nil
	}, gauge)
	return err
}

// ObserveDecision records d: one ratelimit.requests, one ratelimit.denial_cache.hits when
// d.Cached, and, when the reporter timed d (d.Duration is not negative), one
// ratelimit.decision.duration. It allocates nothing once the pair (d.Policy, d.Backend)
// has been seen, unless a name is not valid UTF-8.
func (o *Observer) ObserveDecision(ctx context.Context, d observe.Decision) {
	if ctx == nil {
		ctx = context.Background()
	}
	switch {
	case d.Concurrency:
		o.observePermit(d)
		return
	case d.Lease:
		o.grants.Lookup(d.Policy, d.Backend).cells[observe.PermitCellOf(d)].n.Add(1)
		return
	case d.Settle || d.Reserve:
		o.observeSettle(d)
		return
	}
	s := o.series.Lookup(d.Policy, d.Backend)
	cell, out := observe.CellOf(d)
	s.cells[cell].n.Add(1)
	if d.Cached {
		s.cacheHits.n.Add(1)
	}
	if d.Duration >= 0 {
		o.duration.Record(ctx, d.Duration.Seconds(), s.duration[out]...)
	}
}

// DurationSample returns WithDurationSample's n: reporters need time only one decision
// in n for the Observer (observe.DurationSampler).
func (o *Observer) DurationSample() int { return o.sample }

// ObserveBreaker records c on ratelimit.fallback.transitions. Pass it to
// fallback.WithStateHook.
func (o *Observer) ObserveBreaker(c fallback.StateChange) {
	opt, ok := o.states[[2]fallback.State{c.From, c.To}]
	if !ok {
		opt = transitionOption(c.From.String(), c.To.String())
	}
	o.transitions.Add(context.Background(), 1, opt)
}

func transitionOption(from, to string) metric.AddOption {
	return metric.WithAttributeSet(attribute.NewSet(attribute.String(attrFrom, from), attribute.String(attrTo, to)))
}

func newCounters(policy, backend string) *counters {
	p := attribute.String(attrPolicy, policy)
	b := attribute.String(attrBackend, backend)
	set := func(kv ...attribute.KeyValue) metric.ObserveOption {
		return metric.WithAttributeSet(attribute.NewSet(kv...))
	}
	s := &counters{policy: policy}
	s.cacheHits.attrs = set(p)
	for i := range s.cells {
		c := observe.CellAt(i)
		kv := []attribute.KeyValue{p, attribute.String(attrPriority, c.Priority.String()),
			attribute.String(attrResult, c.Outcome.String()), attribute.Bool(attrShadow, c.Shadow)}
		if c.Outcome == observe.OutcomeError {
			kv = append(kv, attribute.String(attrErrorType, observe.ErrorType(c.Kind)))
		}
		s.cells[i].attrs = set(kv...)
	}
	for _, out := range []observe.Outcome{observe.OutcomeAllowed, observe.OutcomeDenied, observe.OutcomeError} {
		s.duration[out] = []metric.RecordOption{metric.WithAttributeSet(
			attribute.NewSet(p, b, attribute.String(attrResult, out.String())))}
	}
	return s
}
