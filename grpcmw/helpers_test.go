package grpcmw_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/internal/conformance"
	"github.com/sluice-go/ratelimit/local"
)

// newLimiter returns a local limiter reading a clock that moves only when the test says.
func newLimiter(t *testing.T) (*local.Limiter, *conformance.Clock) {
	t.Helper()
	clock := conformance.NewClock()
	l := local.New(local.WithClock(clock.Now), local.WithCleanupInterval(0))
	t.Cleanup(func() { _ = l.Close() })
	return l, clock
}

// The test service, registered without generated code: unary methods A and B echo a
// StringValue; bidirectional streams SA and SB echo every message until the client closes.
const service = "test.Echo"

// serviceDesc returns the test service, whose handlers count their runs in handled.
func serviceDesc(handled *atomic.Int64) *grpc.ServiceDesc {
	unary := func(name string) grpc.MethodDesc {
		return grpc.MethodDesc{MethodName: name, Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			info := &grpc.UnaryServerInfo{Server: srv, FullMethod: "/" + service + "/" + name}
			handler := func(ctx context.Context, req any) (any, error) {
				handled.Add(1)
				return req, nil
			}
			if icpt == nil {
				return handler(ctx, in)
			}
			return icpt(ctx, in, info, handler)
		}}
	}
	echo := func(_ any, ss grpc.ServerStream) error {
		handled.Add(1)
		for {
			m := new(wrapperspb.StringValue)
			if err := ss.RecvMsg(m); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			if err := ss.SendMsg(m); err != nil {
				return err
			}
		}
	}
	bidi := func(name string) grpc.StreamDesc {
		return grpc.StreamDesc{StreamName: name, Handler: echo, ServerStreams: true, ClientStreams: true}
	}
	return &grpc.ServiceDesc{
		ServiceName: service,
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{unary("A"), unary("B")},
		Streams:     []grpc.StreamDesc{bidi("SA"), bidi("SB")},
	}
}

// env is a real gRPC server on an in-memory listener and a client connected to it.
type env struct {
	conn     *grpc.ClientConn
	health   *health.Server
	attempts atomic.Int64 // calls and streams that reached the server, counted before its interceptors
	handled  atomic.Int64 // calls and streams whose handler ran (test service only)
}

// server holds the interceptors of newEnv's server; nil ones are left out.
type server struct {
	unary  grpc.UnaryServerInterceptor
	stream grpc.StreamServerInterceptor
}

// newEnv starts a server with the test service and grpc-go's health service, behind a
// counting interceptor and then srv's, and connects a client with dial's options.
func newEnv(t *testing.T, srv server, dial ...grpc.DialOption) *env {
	t.Helper()
	e := &env{health: health.NewServer()}
	unary := []grpc.UnaryServerInterceptor{func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		e.attempts.Add(1)
		return h(ctx, req)
	}}
	stream := []grpc.StreamServerInterceptor{func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		e.attempts.Add(1)
		return h(srv, ss)
	}}
	if srv.unary != nil {
		unary = append(unary, srv.unary)
	}
	if srv.stream != nil {
		stream = append(stream, srv.stream)
	}
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(unary...), grpc.ChainStreamInterceptor(stream...))
	s.RegisterService(serviceDesc(&e.handled), nil)
	healthpb.RegisterHealthServer(s, e.health)

	lis := bufconn.Listen(1 << 20)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	dial = append([]grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
	}, dial...)
	conn, err := grpc.NewClient("passthrough:///bufconn", dial...)
	require.NoError(t, err)
	e.conn = conn
	t.Cleanup(func() {
		_ = conn.Close()
		s.Stop()
		<-done
	})
	return e
}

// ctx returns a context that ends with the test, and at the latest in 10 s, so that a bug
// cannot hang the run.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

// unaryCall calls the unary method ("A" or "B") and returns its trailer and error.
func (e *env) unaryCall(ctx context.Context, method string) (metadata.MD, error) {
	var trailer metadata.MD
	out := new(wrapperspb.StringValue)
	err := e.conn.Invoke(ctx, "/"+service+"/"+method, wrapperspb.String("hi"), out, grpc.Trailer(&trailer))
	return trailer, err
}

// streamCall opens the stream method ("SA" or "SB"), sends n messages, closes its side and
// receives until the end. It returns the replies received, the trailer, and the stream's
// error (nil when it ended well).
func (e *env) streamCall(ctx context.Context, method string, n int) (int, metadata.MD, error) {
	var trailer metadata.MD
	desc := &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}
	cs, err := e.conn.NewStream(ctx, desc, "/"+service+"/"+method, grpc.Trailer(&trailer))
	if err != nil {
		return 0, trailer, err
	}
	for range n {
		if cs.SendMsg(wrapperspb.String("hi")) != nil {
			break // the stream has ended: RecvMsg says how
		}
	}
	_ = cs.CloseSend()
	replies := 0
	for {
		if err := cs.RecvMsg(new(wrapperspb.StringValue)); err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return replies, cs.Trailer(), err
		}
		replies++
	}
}

// denial is what a test reads off a ResourceExhausted error.
type denial struct {
	retryDelay  time.Duration // 0 when there is no RetryInfo
	subject     string        // of the only QuotaFailure violation; "" when there is none
	description string
}

func denialOf(t *testing.T, err error) denial {
	t.Helper()
	st, ok := status.FromError(err)
	require.True(t, ok, "not a status error: %v", err)
	var d denial
	for _, detail := range st.Details() {
		switch detail := detail.(type) {
		case *errdetails.RetryInfo:
			d.retryDelay = detail.GetRetryDelay().AsDuration()
		case *errdetails.QuotaFailure:
			require.Len(t, detail.GetViolations(), 1)
			d.subject = detail.GetViolations()[0].GetSubject()
			d.description = detail.GetViolations()[0].GetDescription()
		default:
			t.Fatalf("unexpected detail %T", detail)
		}
	}
	return d
}

// stub is a Limiter that answers every call with res and err, and records the costs asked.
type stub struct {
	res   ratelimit.Result
	err   error
	keys  []string
	costs []int
}

func (s *stub) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return s.AllowN(ctx, key, limit, 1)
}

func (s *stub) AllowN(_ context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	s.keys = append(s.keys, key)
	s.costs = append(s.costs, n)
	res := s.res
	res.Limit = limit
	return res, s.err
}

func (s *stub) Wait(context.Context, string, ratelimit.Limit) error { return s.err }
func (s *stub) Close() error                                        { return nil }

var _ ratelimit.Limiter = (*stub)(nil)

// unaryOK is a unary handler that counts its runs.
func unaryOK(runs *int) grpc.UnaryHandler {
	return func(context.Context, any) (any, error) {
		*runs++
		return "ok", nil
	}
}

// direct calls a unary server interceptor as the server would, with a transport stream that
// records the trailer, and returns the trailer and the error.
func direct(ctx context.Context, icpt grpc.UnaryServerInterceptor, method string, handler grpc.UnaryHandler) (metadata.MD, error) {
	sts := &transportStream{method: method}
	ctx = grpc.NewContextWithServerTransportStream(ctx, sts)
	_, err := icpt(ctx, "req", &grpc.UnaryServerInfo{FullMethod: method}, handler)
	return sts.trailer, err
}

// transportStream is a grpc.ServerTransportStream that records the trailer.
type transportStream struct {
	method  string
	trailer metadata.MD
}

func (s *transportStream) Method() string               { return s.method }
func (s *transportStream) SetHeader(metadata.MD) error  { return errors.New("unexpected SetHeader") }
func (s *transportStream) SendHeader(metadata.MD) error { return errors.New("unexpected SendHeader") }
func (s *transportStream) SetTrailer(md metadata.MD) error {
	s.trailer = metadata.Join(s.trailer, md)
	return nil
}

// serverStream is a grpc.ServerStream whose client sends n messages and then closes.
type serverStream struct {
	ctx     context.Context
	n       int
	trailer metadata.MD
}

func (s *serverStream) SetHeader(metadata.MD) error  { return errors.New("unexpected SetHeader") }
func (s *serverStream) SendHeader(metadata.MD) error { return errors.New("unexpected SendHeader") }
func (s *serverStream) SetTrailer(md metadata.MD)    { s.trailer = metadata.Join(s.trailer, md) }
func (s *serverStream) Context() context.Context     { return s.ctx }
func (s *serverStream) SendMsg(any) error            { return nil }
func (s *serverStream) RecvMsg(any) error {
	if s.n == 0 {
		return io.EOF
	}
	s.n--
	return nil
}

// drain is a stream handler that receives until the end, counting the messages it gets in
// *got, and returns the first error other than io.EOF.
func drain(got *int) grpc.StreamHandler {
	return func(_ any, ss grpc.ServerStream) error {
		for {
			if err := ss.RecvMsg(nil); err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			*got++
		}
	}
}

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
