package prommetrics

import "github.com/sluice-go/ratelimit/observe"

// DefaultMaxSeries is the default of WithMaxSeries.
const DefaultMaxSeries = 256

// Option configures a Collector built by New.
type Option func(*options)

type options struct {
	maxSeries   int
	buckets     []bucketSource
	concurrency []concurrencySource
}

// bucketSource is a backend whose buckets ratelimit_buckets reports.
type bucketSource struct {
	backend string
	count   func() int
}

func defaultOptions() options {
	return options{maxSeries: DefaultMaxSeries}
}

// WithMaxSeries bounds the number of distinct (policy, backend) pairs the Collector keeps
// apart, and so the number of series it can make, whatever names reach it: decisions of
// any further pair are counted with policy and backend "_OTHER". Default:
// DefaultMaxSeries (256). A value below 1 means the default.
func WithMaxSeries(n int) Option {
	return func(o *options) {
		if n < 1 {
			n = DefaultMaxSeries
		}
		o.maxSeries = n
	}
}

// WithBuckets reports count() as the value of ratelimit_buckets{ratelimit_backend=backend}
// at each scrape: the number of buckets a limiter holds, e.g. WithBuckets("local", l.Len)
// for a *local.Limiter. count must be safe for concurrent use and quick. Default: no
// ratelimit_buckets series.
func WithBuckets(backend string, count func() int) Option {
	return func(o *options) {
		if count != nil {
			o.buckets = append(o.buckets, bucketSource{observe.ValidName(backend), count})
		}
	}
}
