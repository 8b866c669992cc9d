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
	"go.uber.org/goleak"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// newLimiter returns a local limiter reading a clock that moves only when the test says.
func newLimiter(t *testing.T) (*local.Limiter, *ratelimittest.Clock) {
	clock := ratelimittest.NewClock()
	l := local.New(local.WithClock(clock.Now))
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
	conn   *grpc.ClientConn
	health *health.Server
	// calls and streams that reached the server, counted before its interceptors
	attempts atomic.Int64
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

// Every server, client and limiter a test starts is stopped by its cleanups.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
