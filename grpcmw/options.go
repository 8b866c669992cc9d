package grpcmw

import (
	"context"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/internal/pipeline"
	"github.com/sluice-go/ratelimit/keyfuncs/grpckeys"
	"github.com/sluice-go/ratelimit/observe"
)

// Option configures the interceptors. The same options fit all four constructors, so one
// list can configure a server's unary and stream interceptors alike; options that apply to
// one side only say so. A nil Option is skipped, and a nil function given to an option
// means that option's default.
type Option func(*options)

// call is what the pipeline reads of a call: its context and full method name.
type call struct {
	ctx    context.Context
	method string
	err    error // the handler's, for WithRefundIf
}

type options struct {
	pipeline.Options[call]
	denied     func(ctx context.Context, fullMethod string, res ratelimit.Result) error
	onError    func(ctx context.Context, fullMethod string, err error) error
	perMessage bool
	wait       bool
}

func defaultOptions() options {
	return options{
		Options: pipeline.Defaults(keyOf(grpckeys.FullMethod())),
		onError: logErrors(),
	}
}

func keyOf(f func(ctx context.Context, fullMethod string) (string, error)) func(call) (string, error) {
	return func(c call) (string, error) { return f(c.ctx, c.method) }
}

// WithKeyFunc sets how a call's key is found, from its context and full method name
// ("/package.Service/Method"); on the client side the context is the outgoing one.
// Default: grpckeys.FullMethod(), one bucket per method shared by all its callers. A call
// whose key cannot be found is limited under UnkeyedKey (see "Errors" in the package
// documentation).
func WithKeyFunc(f func(ctx context.Context, fullMethod string) (string, error)) Option {
	return func(o *options) {
		if f == nil {
			o.SetKey("WithKeyFunc", nil, keyOf(grpckeys.FullMethod()))
			return
		}
		o.SetKey("WithKeyFunc", keyOf(f), nil)
	}
}

// WithLimit sets the limit of every call. Default: none: the constructors panic unless one of
// WithLimit, WithMethodLimits, WithLimitFunc and WithLimits gives the limits, and when two of
// them are given. l must be a valid limit: the zero Limit (PerMinute(0), a setting left
// unset) is refused too, since it would leave every call unlimited; exempt calls with
// WithSkipFunc instead.
func WithLimit(l ratelimit.Limit) Option {
	return func(o *options) { o.SetLimit(l) }
}

// WithMethodLimits sets a limit per method: limits maps full method names
// ("/package.Service/Method") to their limits, and other methods get def. An entry of the
// zero Limit is refused, as by WithLimit; def may be the zero Limit, which leaves the other
// methods unlimited. The map is copied. See WithLimit for the
// default.
func WithMethodLimits(limits map[string]ratelimit.Limit, def ratelimit.Limit) Option {
	return func(o *options) {
		o.SetTable("WithMethodLimits", limits, def, func(c call) string { return c.method })
	}
}

// WithLimits gives each call several limits, decided all or nothing: f returns them, each
// with its key, limit, cost and name. Every bucket is charged or none is; the metadata
// reports the binding limit, and a denial's QuotaFailure names every violated limit. Each
// call's keys and costs come with its limits: the constructors panic when WithKeyFunc,
// WithCostFunc or another limit option is given too, and when the limiter does not
// implement ratelimit.MultiLimiter. A nil f is ignored. See docs/limits.md.
func WithLimits(f func(ctx context.Context, fullMethod string) []ratelimit.Request) Option {
	return func(o *options) {
		if f != nil {
			o.SetLimits(func(c call) []ratelimit.Request { return f(c.ctx, c.method) })
		}
	}
}

// WithRefundIf gives a call's tokens back after the handler (on the client side, the
// call) returned err, when f says so: count only calls that failed with a given code, say.
// It needs a limiter that implements ratelimit.Inspector (the constructors panic
// otherwise). Default: no refunds.
func WithRefundIf(f func(ctx context.Context, fullMethod string, err error) bool) Option {
	return func(o *options) {
		o.Refund = nil
		if f != nil {
			o.Refund = func(c call) bool { return f(c.ctx, c.method, c.err) }
		}
	}
}

// WithLimitFunc sets a function that returns each call's limit, for limits that depend on
// the caller's plan and the like; the zero Limit leaves a call unlimited. See WithLimit for
// the default. A nil f is ignored.
func WithLimitFunc(f func(ctx context.Context, fullMethod string) ratelimit.Limit) Option {
	return func(o *options) {
		if f != nil {
			o.SetLimitFunc(func(c call) ratelimit.Limit { return f(c.ctx, c.method) })
		}
	}
}

// WithCostFunc sets how many tokens a call (or, with WithPerMessage, a message) takes.
// Default: 1. It cannot be combined with WithWait, since Limiter.Wait takes one token: the
// client constructors panic.
func WithCostFunc(f func(ctx context.Context, fullMethod string) int) Option {
	return func(o *options) {
		var cost func(call) int
		if f != nil {
			cost = func(c call) int { return f(c.ctx, c.method) }
		}
		o.SetCost("WithCostFunc", cost)
	}
}

// WithSkipFunc sets a function that exempts calls from limiting: when it returns true the
// limiter is not asked. Default: nothing is skipped. Health checks
// ("/grpc.health.v1.Health/Check" and "/Watch") and server reflection are typical.
func WithSkipFunc(f func(ctx context.Context, fullMethod string) bool) Option {
	return func(o *options) {
		o.Skip = nil
		if f != nil {
			o.Skip = func(c call) bool { return f(c.ctx, c.method) }
		}
	}
}

// WithPriorityFunc sets a function that gives each call its priority (ratelimit.Priority): a
// call of a lower priority is admitted only while its bucket keeps a reserve for the higher
// ones (the limiter's reserves: local.WithReserves, distributed.WithReserves), so that a
// flood of sheddable calls (a method that fetches statistics) cannot take the tokens of
// critical ones (a login, a payment). The priority goes in the context the limiter is asked with
// (ratelimit.WithPriority) and to the observer (WithObserver). Default: the priority the
// call's context carries, ratelimit.Critical unless code before the interceptor set one
// (on a client, the caller's). A nil f means the default. See "Priority reserves" in
// docs/algorithms.md.
func WithPriorityFunc(f func(ctx context.Context, fullMethod string) ratelimit.Priority) Option {
	return func(o *options) {
		o.Priority = nil
		if f != nil {
			o.Priority = func(c call) ratelimit.Priority { return f(c.ctx, c.method) }
		}
	}
}

// WithDeniedHandler sets the error a denied call ends with; when f returns nil, the call
// ends with the default. Default: codes.ResourceExhausted with RetryInfo and QuotaFailure
// details (see "Denials" in the package documentation). Whatever f returns, the
// grpc-retry-pushback-ms trailer and the rate-limit metadata are sent.
func WithDeniedHandler(f func(ctx context.Context, fullMethod string, res ratelimit.Result) error) Option {
	return func(o *options) { o.denied = f }
}

// WithErrorHandler sets what is told about a key function's failure and the limiter's
// errors, before the interceptor acts on them. If f returns an error, the call ends with it
// (make it with status.Error, such as codes.Unauthenticated for a call without an API
// key). Default: the error is logged with grpclog at error level, at most once a second
// with the number of errors left out since the last line, and nil is returned.
func WithErrorHandler(f func(ctx context.Context, fullMethod string, err error) error) Option {
	return func(o *options) {
		if f == nil {
			f = logErrors()
		}
		o.onError = f
	}
}

// WithErrorPolicy sets what happens to a call when the limiter fails (Redis unreachable,
// limiter closed). Default: ratelimit.FailOpen, the call proceeds; ratelimit.FailClosed
// ends it with codes.Unavailable.
func WithErrorPolicy(p ratelimit.ErrorPolicy) Option {
	return func(o *options) { o.Policy = p }
}

// WithHeaderStyle sets which rate-limit metadata calls carry, mirroring the HTTP headers of
// package headers in lower case ("x-ratelimit-limit", ...; "retry-after" on denials), as
// trailer metadata; headers.StyleNone sends none. Default: headers.StyleXRateLimit. On the
// client side a denial fills the trailer of a grpc.Trailer call option. Denials carry
// their status details and grpc-retry-pushback-ms whatever the style.
func WithHeaderStyle(s headers.Style) Option {
	return func(o *options) { o.SetStyle(s) }
}

// WithPolicyName sets the policy name of the IETF ratelimit-policy and ratelimit metadata.
// Default: headers.DefaultPolicyName, "default".
func WithPolicyName(name string) Option {
	return func(o *options) {
		if name == "" {
			name = headers.DefaultPolicyName
		}
		o.PolicyName = name
	}
}

// WithPerMessage makes StreamServerInterceptor charge each message the client sends, when
// the handler receives it, instead of the stream once when it opens. Default: off. The
// other constructors ignore it; StreamServerInterceptor panics when WithRefundIf is given
// too (a stream charged per message cannot be refunded). See "Streams" in the package
// documentation.
func WithPerMessage() Option {
	return func(o *options) { o.perMessage = true }
}

// WithWait makes the client interceptors wait (ratelimit.Limiter.Wait) until the call is
// allowed, or its context ends, instead of failing it. Default: off. The limiter must
// support Wait; a call whose deadline comes before its turn fails at once with
// codes.DeadlineExceeded. The server interceptors ignore it: a server that waits holds a
// goroutine and a stream for every waiting call.
func WithWait() Option {
	return func(o *options) { o.wait = true }
}

// WithObserver reports every decision to obs (observe.Observer; packages otelmetrics,
// prommetrics and slogobserver have ready ones), under the policy name of WithPolicyName,
// never the key. Default: none. See docs/observability.md.
func WithObserver(obs observe.Observer) Option {
	return func(o *options) { o.Observer = obs }
}

// WithShadow makes the middleware decide and report every call, but let every one
// proceed (no denial, no Retry-After, headers only when WithHeaderStyle asks), in buckets
// apart from the enforced ones: a safe rollout of a new limit. A shadow decision waits for
// the limiter at most 10 ms, and after the limiter fails, shadow decisions pause for a
// second: a shadow limit never slows the real traffic by more. Default: off. See
// docs/middleware.md.
func WithShadow() Option {
	return func(o *options) { o.Shadow = true }
}
