package otelmetrics

import (
	"go.opentelemetry.io/otel/metric"

	"github.com/sluice-go/ratelimit/observe"
)

// DefaultMaxSeries is the default of WithMaxSeries.
const DefaultMaxSeries = 256

// DefaultDurationSample is the default of WithDurationSample.
const DefaultDurationSample = 16

// Option configures an Observer built by New.
type Option func(*options)

type options struct {
	provider    metric.MeterProvider
	maxSeries   int
	sample      int
	buckets     []bucketSource
	concurrency []concurrencySource
}

// bucketSource is a backend whose buckets the ratelimit.buckets instrument reports.
type bucketSource struct {
	backend string
	count   func() int
}

func defaultOptions() options {
	return options{maxSeries: DefaultMaxSeries, sample: DefaultDurationSample}
}

// WithMeterProvider sets the MeterProvider the instruments come from. Default: the global
// one, otel.GetMeterProvider(), as it is when New is called. A nil mp means the default.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *options) { o.provider = mp }
}

// WithMaxSeries bounds the number of distinct (policy, backend) pairs the Observer keeps
// apart, and so the number of series it can make, whatever names reach it: decisions of
// any further pair are counted with policy and backend "_OTHER". Policies and backends are
// names fixed by configuration, so the bound is reached only by mistake (a key given as a
// policy name). Default: DefaultMaxSeries (256). A value below 1 means the default.
func WithMaxSeries(n int) Option {
	return func(o *options) {
		if n < 1 {
			n = DefaultMaxSeries
		}
		o.maxSeries = n
	}
}

// WithDurationSample sets how many decisions ratelimit.decision.duration records: one in
// n, as the Observer's DurationSample method tells the reporter (observe.Wrap, a
// middleware), which times the first decision it reports, the (n+1)th, ..., and no other,
// so that its buckets hold a systematic sample of the durations (of all the decisions the
// reporter makes: a result seen rarely may have no measurement) while ratelimit.requests
// counts every decision exactly. Recording a measurement on the OpenTelemetry SDK's
// histogram costs a few hundred nanoseconds, more than a local decision, and timing a
// decision two readings of the clock; one in DefaultDurationSample saves both for 15
// decisions in 16. Read quantiles from the histogram and counts from ratelimit.requests:
// the histogram's count is about 1/n of the decisions. The Observer records every
// decision it is told with a duration, so joined (observe.Join) with an observer that
// needs every duration, such as prommetrics', it records every one. Default:
// DefaultDurationSample (16); 1 records every decision. A value below 1 means the default.
func WithDurationSample(n int) Option {
	return func(o *options) {
		if n < 1 {
			n = DefaultDurationSample
		}
		o.sample = n
	}
}

// WithBuckets reports count() as the value of ratelimit.buckets for backend at each
// collection: the number of buckets a limiter holds, e.g. WithBuckets("local", l.Len) for a
// *local.Limiter. It may be given once per backend name; count must be safe for concurrent
// use and quick. Default: no ratelimit.buckets series.
func WithBuckets(backend string, count func() int) Option {
	return func(o *options) {
		if count != nil {
			o.buckets = append(o.buckets, bucketSource{observe.ValidName(backend), count})
		}
	}
}
