package grpcmw_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/headers"
)

// A stream is charged once, when it opens, however many messages it carries.
func TestStreamChargedOnce(t *testing.T) {
	for _, k := range kinds {
		if !k.stream {
			continue
		}
		t.Run(k.name, func(t *testing.T) {
			l, _ := newLimiter(t)
			e := k.env(t, l, grpcmw.WithLimit(ratelimit.PerMinute(2)))
			for range 2 {
				replies, _, err := e.streamCall(ctx(t), "SA", 5)
				require.NoError(t, err)
				assert.Equal(t, 5, replies)
			}
			replies, md, err := e.streamCall(ctx(t), "SA", 5)
			assert.Equal(t, outcome{codes.ResourceExhausted, denial{30e9, "rpc", "rate limit \"default\" (2/min) exceeded"}, "30000"},
				outcomeOf(t, md, err))
			assert.Zero(t, replies)
			assert.Equal(t, int64(2), e.handled.Load(), "the handler of a denied stream does not run")
		})
	}
}

// grpc-go's health Watch is a server stream: one request, then a message per status change.
// The first Watch sees three messages on one charge; the second is denied before the
// handler runs.
func TestHealthWatchChargedOnce(t *testing.T) {
	l, _ := newLimiter(t)
	e := newEnv(t, server{stream: grpcmw.StreamServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(1)))})
	client := healthpb.NewHealthClient(e.conn)

	watchCtx, cancel := context.WithCancel(ctx(t))
	defer cancel()
	w, err := client.Watch(watchCtx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	var got []healthpb.HealthCheckResponse_ServingStatus
	for i, next := range []healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_SERVING, -1} {
		res, err := w.Recv()
		require.NoError(t, err, "message %d", i)
		got = append(got, res.GetStatus())
		if next >= 0 {
			e.health.SetServingStatus("", next) // after the Recv, so that no update is coalesced
		}
	}
	assert.Equal(t, []healthpb.HealthCheckResponse_ServingStatus{
		healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_SERVING}, got)

	w2, err := client.Watch(ctx(t), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = w2.Recv()
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, "60000", w2.Trailer().Get(grpcmw.PushbackKey)[0])
}

// With WithPerMessage each message the handler receives is charged: of five messages on a
// bucket of three, three are echoed and the fourth ends the stream.
func TestPerMessage(t *testing.T) {
	l, _ := newLimiter(t)
	e := newEnv(t, server{stream: grpcmw.StreamServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(3)),
		grpcmw.WithPerMessage())})
	replies, md, err := e.streamCall(ctx(t), "SA", 5)
	assert.Equal(t, 3, replies)
	assert.Equal(t, outcome{codes.ResourceExhausted, denial{20e9, "rpc", "rate limit \"default\" (3/min) exceeded"}, "20000"},
		outcomeOf(t, md, err))

	// The bucket is empty: a new stream opens (opening is not charged), and its first message
	// is denied.
	replies, _, err = e.streamCall(ctx(t), "SA", 1)
	assert.Zero(t, replies)
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, int64(2), e.handled.Load())
}

// Called directly: a stream is charged before the handler runs; per message, after each
// message is received, and the trailer of the latest decision is set once.
func TestStreamServerDirect(t *testing.T) {
	info := &grpc.StreamServerInfo{FullMethod: "/test.Echo/SA", IsClientStream: true, IsServerStream: true}
	t.Run("once", func(t *testing.T) {
		l, _ := newLimiter(t)
		icpt := grpcmw.StreamServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(1)))
		var got int
		require.NoError(t, icpt(nil, &serverStream{ctx: context.Background(), n: 4}, info, drain(&got)))
		assert.Equal(t, 4, got)
		ss := &serverStream{ctx: context.Background(), n: 4}
		got = 0
		err := icpt(nil, ss, info, drain(&got))
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		assert.Zero(t, got, "the handler did not run")
		assert.Equal(t, []string{"60000"}, ss.trailer.Get(grpcmw.PushbackKey))
	})
	t.Run("per message", func(t *testing.T) {
		l, _ := newLimiter(t)
		icpt := grpcmw.StreamServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(3)), grpcmw.WithPerMessage(),
			grpcmw.WithHeaderStyle(headers.StyleXRateLimit))
		ss := &serverStream{ctx: context.Background(), n: 5}
		var got int
		err := icpt(nil, ss, info, drain(&got))
		assert.Equal(t, codes.ResourceExhausted, status.Code(err))
		assert.Equal(t, 3, got)
		assert.Equal(t, []string{"20000"}, ss.trailer.Get(grpcmw.PushbackKey))
		assert.Equal(t, []string{"20"}, ss.trailer.Get("retry-after"), "one value: the latest decision's")
	})
	t.Run("per message, all allowed", func(t *testing.T) {
		l, _ := newLimiter(t)
		icpt := grpcmw.StreamServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(3)), grpcmw.WithPerMessage(),
			grpcmw.WithHeaderStyle(headers.StyleXRateLimit))
		ss := &serverStream{ctx: context.Background(), n: 2}
		var got int
		require.NoError(t, icpt(nil, ss, info, drain(&got)))
		assert.Equal(t, []string{"1"}, ss.trailer.Get("x-ratelimit-remaining"))
		assert.Empty(t, ss.trailer.Get(grpcmw.PushbackKey))
	})
}
