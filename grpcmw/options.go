package grpcmw

import (
	"context"

	"google.golang.org/grpc/metadata"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/keypart"
	"github.com/sluice-go/ratelimit/internal/pipeline"
	"github.com/sluice-go/ratelimit/keyfuncs/grpckeys"
)

// The options the middlewares share are generated into options_gen.go from one table;
// the ones below are gRPC's own.
//go:generate go run ../internal/optionsgen grpcmw

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
	o := options{
		Options: pipeline.Defaults(keyOf(grpckeys.FullMethod())),
		onError: logErrors(),
	}
	o.KeyParts = func(c call) (string, string, bool) { // grpckeys.FullMethod's, in parts
		return "rpc:", c.method, c.method != "" && keypart.Plain("rpc", c.method)
	}
	return o
}

func keyOf(f func(ctx context.Context, fullMethod string) (string, error)) func(call) (string, error) {
	return func(c call) (string, error) { return f(c.ctx, c.method) }
}

// WithDeniedHandler sets the error a denied call ends with; when f returns nil, the call
// ends with the default. Default: codes.ResourceExhausted with RetryInfo and QuotaFailure
// details (see "Denials" in the package documentation). Whatever f returns, the
// grpc-retry-pushback-ms trailer and the rate-limit metadata are sent.
func WithDeniedHandler(f func(ctx context.Context, fullMethod string, res ratelimit.Result) error) Option {
	return func(o *options) { o.denied = f }
}

// WithErrorHandler sets what is told about a key function's failure, the limiter's errors and,
// once, a zero Limit from WithLimitFunc, before the interceptor acts on them. If f returns an
// error, the call ends with it (make it with status.Error, such as codes.Unauthenticated for a
// call without an API key). Default: the error is logged with grpclog at error level, at most
// once a second with the number of errors left out since the last line, and nil is returned.
func WithErrorHandler(f func(ctx context.Context, fullMethod string, err error) error) Option {
	return func(o *options) {
		if f == nil {
			f = logErrors()
		}
		o.onError = f
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
// codes.DeadlineExceeded. A wait is one limit of one token, enforced: the client
// constructors panic beside WithCostFunc, WithLimits, WithRules and WithShadow. The
// observer (WithObserver) is told of each wait as of a decision, its Duration the time to
// admit the call: allowed, denied when the turn comes after the deadline, or an error. The
// server interceptors ignore it: a server that waits holds a goroutine and a stream for
// every waiting call.
func WithWait() Option {
	return func(o *options) { o.wait = true }
}

// metadataValue is the first value of the metadata name of a call's context, "" when
// absent: the incoming metadata on a server, the outgoing on a client (WithRules).
func metadataValue(ctx context.Context, name string) string {
	vals := metadata.ValueFromIncomingContext(ctx, name)
	if vals == nil {
		md, _ := metadata.FromOutgoingContext(ctx)
		vals = md.Get(name)
	}
	if len(vals) > 0 {
		return vals[0]
	}
	return ""
}
