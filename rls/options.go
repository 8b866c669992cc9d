package rls

import (
	"time"

	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/observe"
)

// FailureMode is what ShouldRateLimit answers for the descriptors it could not decide,
// because the limiter failed (Redis down and no fallback, say).
type FailureMode int

const (
	// FailOpen answers OK for them, as Envoy's failure_mode_deny: false expects of a
	// service that cannot decide. It is the default: a broken limiter does not take the
	// traffic down with it.
	FailOpen FailureMode = iota
	// FailClosed answers OVER_LIMIT for them.
	FailClosed
	// FailError answers the call with a gRPC Unavailable error, as the reference service
	// does, so that Envoy's failure_mode_deny decides.
	FailError
)

// String returns "FailOpen", "FailClosed" or "FailError".
func (m FailureMode) String() string {
	switch m {
	case FailOpen:
		return "FailOpen"
	case FailClosed:
		return "FailClosed"
	case FailError:
		return "FailError"
	}
	return "FailureMode(?)"
}

// Option configures a Service built by New.
type Option func(*options)

type options struct {
	clock            func() time.Time
	style            headers.Style
	noHeaders        bool
	failure          FailureMode
	noOverrides      bool
	noHashTag        bool
	observer         observe.Observer
	setStyle, setOff bool
}

func defaultOptions() options {
	return options{clock: time.Now, style: headers.StyleIETF}
}

// WithClock makes the service read the time from now for the duration_until_reset of
// fixed windows, which it computes as the reference service does (the unit less the time
// since the window's start, in whole seconds). Give the limiter the same clock
// (local.WithClock). Default: time.Now; a nil now means the default.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.clock = now
		}
	}
}

// WithHeaderStyle sets the rate-limit header fields of each response's
// response_headers_to_add, for the descriptor nearest its limit (the one that denied, on
// a denial): headers.StyleIETF (RateLimit-Policy and RateLimit, with Retry-After on a
// denial) by default; headers.StyleXRateLimit for X-RateLimit-Limit, -Remaining and -Reset,
// the values the reference service writes when its response headers are enabled;
// headers.StyleBoth for both. New panics when it is given with WithoutHeaders.
func WithHeaderStyle(s headers.Style) Option {
	return func(o *options) { o.style, o.setStyle = s, true }
}

// WithoutHeaders leaves response_headers_to_add empty, as the reference service does by
// default.
func WithoutHeaders() Option {
	return func(o *options) { o.noHeaders, o.setOff = true, true }
}

// WithFailureMode sets what the service answers for descriptors the limiter could not
// decide. Default: FailOpen.
func WithFailureMode(m FailureMode) Option {
	return func(o *options) { o.failure = m }
}

// WithoutDescriptorLimits makes the service ignore the limit a request's descriptor carries
// (Envoy's rate limit override, the descriptor's limit field) and apply the configured one.
// By default the descriptor's own limit is applied, as the reference service does, to a
// descriptor of a configured domain, in place of what the configuration says.
func WithoutDescriptorLimits() Option {
	return func(o *options) { o.noOverrides = true }
}

// WithoutHashTag leaves the Redis Cluster hash tag out of bucket keys. By default every key
// starts with a hash tag of its domain, so that the buckets of one request share a slot and
// a Redis Cluster decides them in one atomic script; a domain then lives on one node.
// Without the tag, a request's buckets spread over the slots and are decided per slot, the
// earlier slots refunded when a later one denies (see distributed.WithCrossSlot).
func WithoutHashTag() Option {
	return func(o *options) { o.noHashTag = true }
}

// WithObserver makes the service report every decision of its limiter to o, one
// observe.Decision per descriptor with a limit, under the descriptor's path (Rule.Path:
// configured keys and values, never a request's), so that the series stay bounded.
// Default: none.
func WithObserver(o observe.Observer) Option {
	return func(opts *options) {
		if o != nil {
			opts.observer = observe.Join(o)
		}
	}
}
