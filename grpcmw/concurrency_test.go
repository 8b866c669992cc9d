package grpcmw_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/grpcmw"
)

// WithConcurrency on a unary server: one call of a method at a time (the default key is
// the method). The second call, while the first runs, ends with ResourceExhausted and no
// pushback; the permit is released when the handler returns.
func TestConcurrencyUnary(t *testing.T) {
	conc := local.New(local.WithQueue(-1, local.OldestFirst))
	t.Cleanup(func() { _ = conc.Close() })
	icpt := grpcmw.UnaryServerInterceptor(nil, grpcmw.WithConcurrency(conc, 1))
	info := &grpc.UnaryServerInfo{FullMethod: "/t.S/Export"}
	entered, release := make(chan struct{}), make(chan struct{})
	slow := func(context.Context, any) (any, error) {
		entered <- struct{}{}
		<-release
		return "done", nil
	}
	fast := func(context.Context, any) (any, error) { return "done", nil }

	first := make(chan error)
	go func() {
		_, err := icpt(context.Background(), nil, info, slow)
		first <- err
	}()
	<-entered
	_, err := icpt(context.Background(), nil, info, fast)
	st, _ := status.FromError(err)
	assert.Equal(t, codes.ResourceExhausted, st.Code())
	assert.Equal(t, "too many requests in flight", st.Message())
	close(release)
	require.NoError(t, <-first)
	resp, err := icpt(context.Background(), nil, info, fast)
	require.NoError(t, err)
	assert.Equal(t, "done", resp)
}

// A client stream's end is not seen by its interceptor: WithConcurrency there refuses to
// start, as does WithPerMessage beside it on a server stream.
func TestConcurrencyRefusedOnStreams(t *testing.T) {
	conc := local.New()
	t.Cleanup(func() { _ = conc.Close() })
	assert.Panics(t, func() { grpcmw.StreamClientInterceptor(nil, grpcmw.WithConcurrency(conc, 1)) })
	assert.PanicsWithValue(t, "grpcmw: StreamServerInterceptor: WithPerMessage and WithConcurrency: a permit is held by a stream, not by a message; pass one of them",
		func() { grpcmw.StreamServerInterceptor(nil, grpcmw.WithConcurrency(conc, 1), grpcmw.WithPerMessage()) })
}
