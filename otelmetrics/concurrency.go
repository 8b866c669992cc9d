package otelmetrics

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/observe"
)

// concurrencySource is a concurrency limiter whose permits the ratelimit.concurrency.*
// instruments report, under a policy name.
type concurrencySource struct {
	policy string
	stats  concurrency.StatsReporter
}

// WithConcurrency reports the permits of a concurrency limiter (any backend of package
// concurrency), on the ratelimit.concurrency.* instruments at each collection, with
// ratelimit.policy = policy: the limit in force (its lowest and highest among the
// limiter's keys), the permits in flight, the callers waiting and the keys tracked. The
// figures aggregate every key of the limiter: none is reported per key. It may be given once
// per policy name (New fails on a second); l.Stats must be safe for concurrent use. A nil
// l is skipped; New fails on one that holds a nil pointer. Default: no ratelimit.concurrency.*
// series.
func WithConcurrency(policy string, l concurrency.StatsReporter) Option {
	return func(o *options) {
		if l != nil {
			o.concurrency = append(o.concurrency, concurrencySource{observe.ValidName(policy), l})
		}
	}
}

// registerConcurrency makes the ratelimit.concurrency.* instruments, when there is a
// source for them.
func registerConcurrency(meter metric.Meter, sources []concurrencySource) error {
	if len(sources) == 0 {
		return nil
	}
	attrs := make([]metric.ObserveOption, len(sources))
	seen := make(map[string]bool, len(sources))
	for i, s := range sources {
		if seen[s.policy] {
			return fmt.Errorf("otelmetrics: WithConcurrency given twice for policy %q", s.policy)
		}
		seen[s.policy] = true
		attrs[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String(attrPolicy, s.policy)))
	}
	var errs [5]error
	var minLimit, maxLimit metric.Int64ObservableGauge
	var inFlight, waiting, keys metric.Int64ObservableUpDownCounter
	minLimit, errs[0] = meter.Int64ObservableGauge("ratelimit.concurrency.limit.min",
		metric.WithUnit("{permit}"),
		metric.WithDescription("The lowest concurrency limit in force among a policy's keys."))
	maxLimit, errs[1] = meter.Int64ObservableGauge("ratelimit.concurrency.limit.max",
		metric.WithUnit("{permit}"),
		metric.WithDescription("The highest concurrency limit in force among a policy's keys."))
	inFlight, errs[2] = meter.Int64ObservableUpDownCounter("ratelimit.concurrency.in_flight",
		metric.WithUnit("{permit}"),
		metric.WithDescription("Concurrency permits granted and not yet released."))
	waiting, errs[3] = meter.Int64ObservableUpDownCounter("ratelimit.concurrency.waiting",
		metric.WithUnit("{request}"),
		metric.WithDescription("Callers waiting for a concurrency permit."))
	keys, errs[4] = meter.Int64ObservableUpDownCounter("ratelimit.concurrency.keys",
		metric.WithUnit("{key}"),
		metric.WithDescription("Keys a concurrency limiter tracks."))
	if err := errors.Join(errs[:]...); err != nil {
		return err
	}
	_, err := meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		for i, s := range sources {
			st := s.stats.Stats()
			obs.ObserveInt64(inFlight, int64(st.InFlight), attrs[i])
			obs.ObserveInt64(waiting, int64(st.Waiting), attrs[i])
			obs.ObserveInt64(keys, int64(st.Keys), attrs[i])
			if st.Keys > 0 { // no key, no limit in force
				obs.ObserveInt64(minLimit, int64(st.MinLimit), attrs[i])
				obs.ObserveInt64(maxLimit, int64(st.MaxLimit), attrs[i])
			}
		}
		return nil
	}, minLimit, maxLimit, inFlight, waiting, keys)
	return err
}

// permitCounters holds the counts of one (policy, backend) pair's concurrency decisions
// (observe.Decision.Concurrency) and their attribute sets.
type permitCounters struct {
	policy string
	cells  [observe.NumCells]counter // by observe.PermitCellOf
}

func newPermitCounters(policy, _ string) *permitCounters {
	p := attribute.String(attrPolicy, policy)
	s := &permitCounters{policy: policy}
	for i := range s.cells {
		c := observe.CellAt(i)
		if c.Priority != 0 || c.Shadow {
			continue // never counted: see observe.PermitCellOf
		}
		kv := []attribute.KeyValue{p, attribute.String(attrResult, c.Outcome.String())}
		if c.Outcome == observe.OutcomeError {
			kv = append(kv, attribute.String(attrErrorType, observe.ErrorType(c.Kind)))
		}
		s.cells[i].attrs = metric.WithAttributeSet(attribute.NewSet(kv...))
	}
	return s
}

// registerPermits makes ratelimit.concurrency.requests, which counts the decisions of
// concurrency limits by policy and result.
func (o *Observer) registerPermits(meter metric.Meter, maxSeries int) error {
	var err error
	o.permits, o.permitRequests, err = registerOutcomes(meter, maxSeries, "ratelimit.concurrency.requests",
		"{request}", "Concurrency-limit decisions, by policy and result: a permit granted, refused, or not decided.")
	return err
}

// registerOutcomes makes the counter name, which reports the counts of the series it
// returns by policy and outcome.
func registerOutcomes(meter metric.Meter, maxSeries int, name, unit, desc string) (*observe.Series[permitCounters], metric.Int64ObservableCounter, error) {
	series := observe.NewSeries(maxSeries, newPermitCounters)
	counter, err := meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
	if err != nil {
		return series, counter, err
	}
	_, err = meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		type sums struct {
			series *permitCounters
			cells  [observe.NumCells]int64
		}
		byPolicy := make(map[string]*sums)
		series.All(func(s *permitCounters) {
			sum := byPolicy[s.policy]
			if sum == nil {
				sum = &sums{series: s}
				byPolicy[s.policy] = sum
			}
			for i := range s.cells {
				sum.cells[i] += s.cells[i].n.Load()
			}
		})
		for _, sum := range byPolicy {
			for i, n := range sum.cells {
				if n > 0 {
					obs.ObserveInt64(counter, n, sum.series.cells[i].attrs)
				}
			}
		}
		return nil
	}, counter)
	return series, counter, err
}

// observePermit counts d, a concurrency limit's decision.
func (o *Observer) observePermit(d observe.Decision) {
	o.permits.Lookup(d.Policy, d.Backend).cells[observe.PermitCellOf(d)].n.Add(1)
}
