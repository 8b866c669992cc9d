package grpcmw_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/grpcmw"
)

// interceptorKind is one of the four constructors, with the way to install it in an env
// and to make a call through it.
type interceptorKind struct {
	name   string
	server bool
	stream bool
}

var kinds = []interceptorKind{
	{"UnaryServer", true, false},
	{"StreamServer", true, true},
	{"UnaryClient", false, false},
	{"StreamClient", false, true},
}

// method returns the full name of the test method of this kind's shape: "/test.Echo/A" or
// "/test.Echo/SA" for "A".
func (k interceptorKind) method(name string) string {
	if k.stream {
		name = "S" + name
	}
	return "/" + service + "/" + name
}

// env starts an env with the interceptor of this kind built on l with opts.
func (k interceptorKind) env(t *testing.T, l ratelimit.Limiter, opts ...grpcmw.Option) *env {
	t.Helper()
	switch {
	case k.server && k.stream:
		return newEnv(t, server{stream: grpcmw.StreamServerInterceptor(l, opts...)})
	case k.server:
		return newEnv(t, server{unary: grpcmw.UnaryServerInterceptor(l, opts...)})
	case k.stream:
		return newEnv(t, server{}, grpc.WithStreamInterceptor(grpcmw.StreamClientInterceptor(l, opts...)))
	}
	return newEnv(t, server{}, grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(l, opts...)))
}

// call makes one call of method name ("A" or "B") in this kind's shape (a stream sends
// one message) and returns its trailer and error.
func (k interceptorKind) call(ctx context.Context, e *env, name string) (metadata.MD, error) {
	if k.stream {
		_, md, err := e.streamCall(ctx, "S"+name, 1)
		return md, err
	}
	return e.unaryCall(ctx, name)
}
