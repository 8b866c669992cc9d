package grpcmw

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/keyfuncs/grpckeys"
)

// Option configures the interceptors. The same options fit all four constructors, so one
// list can configure a server's unary and stream interceptors alike; options that apply
// to one side only say so.
type Option func(*options)

type options struct {
	key        func(ctx context.Context, fullMethod string) (string, error)
	limit      func(ctx context.Context, fullMethod string) ratelimit.Limit
	check      func() error // validates the limits of WithLimit or WithMethodLimits
	cost       func(ctx context.Context, fullMethod string) int
	skip       func(ctx context.Context, fullMethod string) bool
	onError    func(ctx context.Context, fullMethod string, err error) error
	policy     ratelimit.ErrorPolicy
	perMessage bool
	wait       bool
	metadata   bool
	style      headers.Style
	policyName string
}

func defaultOptions() options {
	return options{
		key:        grpckeys.FullMethod(),
		onError:    logError,
		policy:     ratelimit.FailOpen,
		policyName: headers.DefaultPolicyName,
	}
}

// WithKeyFunc sets how a call's key is found, from its context and full method name
// ("/package.Service/Method"). Default: grpckeys.FullMethod(), "rpc:/package.Service/Method",
// so that each method has one bucket shared by all its callers. Package grpckeys has keys
// by peer address, metadata value and context value, and Compose to combine them. A key
// function that fails, or returns "", does not let the call through unlimited: see the
// package documentation. On the client side the context is the outgoing one. nil means the
// default.
func WithKeyFunc(f func(ctx context.Context, fullMethod string) (string, error)) Option {
	return func(o *options) {
		if f == nil {
			f = grpckeys.FullMethod()
		}
		o.key = f
	}
}

// WithLimit sets the limit of every call. Default: none; the constructors panic unless
// WithLimit, WithMethodLimits or WithLimitFunc gives one. The zero Limit turns limiting off;
// any other limit must be valid (the constructors panic otherwise). Of WithLimit,
// WithMethodLimits and WithLimitFunc, the last one given applies.
func WithLimit(l ratelimit.Limit) Option {
	return func(o *options) {
		o.check = func() error { return validate(fmt.Sprintf("WithLimit(%v)", l), l) }
		o.limit = func(context.Context, string) ratelimit.Limit { return l }
	}
}

// WithMethodLimits sets a limit per method: limits maps full method names
// ("/package.Service/Method") to their limits, and methods not in it get def. The zero
// Limit, in the map or as def, leaves the methods it applies to unlimited. Default: none;
// see WithLimit. Every other limit must be valid (the constructors panic otherwise). The map
// is copied. Of WithLimit, WithMethodLimits and WithLimitFunc, the last one given applies.
func WithMethodLimits(limits map[string]ratelimit.Limit, def ratelimit.Limit) Option {
	limits = maps.Clone(limits)
	return func(o *options) {
		o.check = func() error {
			for _, name := range slices.Sorted(maps.Keys(limits)) {
				if err := validate(fmt.Sprintf("WithMethodLimits: %s: %v", name, limits[name]), limits[name]); err != nil {
					return err
				}
			}
			return validate(fmt.Sprintf("WithMethodLimits: default %v", def), def)
		}
		o.limit = func(_ context.Context, fullMethod string) ratelimit.Limit {
			if l, ok := limits[fullMethod]; ok {
				return l
			}
			return def
		}
	}
}

// validate returns nil for the zero Limit, which means "not limited", and for a valid one.
func validate(what string, l ratelimit.Limit) error {
	if l.IsZero() {
		return nil
	}
	if err := l.Validate(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// WithLimitFunc sets a function that returns each call's limit, for limits that depend on
// the caller's plan, the method, and so on. Default: none; see WithLimit. A call for which f
// returns the zero Limit is not limited. An invalid limit is the limiter's error
// (ratelimit.ErrInvalidLimit), handled by the error policy. Of WithLimit, WithMethodLimits
// and WithLimitFunc, the last one given applies; a nil f is ignored.
func WithLimitFunc(f func(ctx context.Context, fullMethod string) ratelimit.Limit) Option {
	return func(o *options) {
		if f != nil {
			o.check = nil
			o.limit = f
		}
	}
}

// WithCostFunc sets how many tokens a call takes (ratelimit.Limiter.AllowN), for calls that
// cost more than others. Default: 1 for every call (and, with WithPerMessage, for every
// message). A cost below 1 is the limiter's error (ratelimit.ErrInvalidCost), handled by the
// error policy; a cost above the limit's Burst can never be allowed and is answered
// ResourceExhausted whatever the policy. It cannot be combined with WithWait, since
// Limiter.Wait takes one token: the client constructors panic. nil means the default.
func WithCostFunc(f func(ctx context.Context, fullMethod string) int) Option {
	return func(o *options) { o.cost = f }
}

// WithSkipFunc sets a function that exempts calls from limiting: when it returns true the
// limiter is not asked. Default: nothing is skipped. Health checks
// ("/grpc.health.v1.Health/Check" and "/Watch") and server reflection are typical. nil means
// the default.
func WithSkipFunc(f func(ctx context.Context, fullMethod string) bool) Option {
	return func(o *options) { o.skip = f }
}

// WithErrorHandler sets what is told about errors: a key function's failure and the
// limiter's errors. If f returns an error, the call ends with it (make it with
// status.Error, such as codes.Unauthenticated for a call without an API key); if f returns
// nil, the interceptor goes on as the package documentation describes. Default: the error
// is logged with grpclog at error level and nil is returned; under fail open with a broken
// limiter that is one line per call, so a busy service may want a handler that samples.
// nil means the default.
func WithErrorHandler(f func(ctx context.Context, fullMethod string, err error) error) Option {
	return func(o *options) {
		if f == nil {
			f = logError
		}
		o.onError = f
	}
}

// WithErrorPolicy sets what happens to a call when the limiter fails (Redis unreachable,
// limiter closed). Default: ratelimit.FailOpen, the call proceeds. With
// ratelimit.FailClosed it ends with codes.Unavailable, "rate limiter unavailable". (A
// denial is never Unavailable: see the package documentation.)
func WithErrorPolicy(p ratelimit.ErrorPolicy) Option {
	return func(o *options) { o.policy = p }
}

// WithPerMessage makes StreamServerInterceptor charge each message the client sends, when
// the handler receives it (RecvMsg), instead of the stream once when it opens. Default: off,
// streams are charged once. The other constructors ignore it: a unary call is one message.
// See "Streams" in the package documentation for the caveats.
func WithPerMessage() Option {
	return func(o *options) { o.perMessage = true }
}

// WithWait makes the client interceptors wait (ratelimit.Limiter.Wait) until the call is
// allowed, or its context ends, instead of failing it with ResourceExhausted. Default: off.
// The limiter must support Wait (package local does; the Redis backend returns
// ratelimit.ErrNotSupported, handled by the error policy). A call whose deadline comes
// before its token would fails at once with codes.DeadlineExceeded. The server
// interceptors ignore it: a server that waits holds a goroutine and a stream for every
// waiting call, which is what rate limiting is there to prevent.
func WithWait() Option {
	return func(o *options) { o.wait = true }
}

// WithMetadata makes the server interceptors send rate-limit metadata mirroring the HTTP
// headers of package headers, in the style given ("x-ratelimit-limit",
// "x-ratelimit-remaining", "x-ratelimit-reset" for headers.StyleXRateLimit; "retry-after"
// on denials), as trailer metadata: a response with header metadata is committed and no
// longer retried by gRPC clients. On the client side a denial fills the trailer of a
// grpc.Trailer call option with the same fields. Default: off; denials carry their status
// details and grpc-retry-pushback-ms whatever this option says.
func WithMetadata(style headers.Style) Option {
	return func(o *options) {
		o.metadata = true
		o.style = style
	}
}

// WithPolicyName sets the policy name in the IETF ratelimit-policy and ratelimit metadata
// (WithMetadata with headers.StyleIETF or headers.StyleBoth). Default:
// headers.DefaultPolicyName, "default".
func WithPolicyName(name string) Option {
	return func(o *options) { o.policyName = name }
}
