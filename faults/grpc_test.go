package faults

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// TestGRPCRedisStopped: Redis is stopped in the middle of a load test through the gRPC
// unary server interceptor on a loopback gRPC server (the health service), then brought
// back (see outage for what is checked). Every call is to one method, the interceptor's
// default key, so all share one bucket. OK counts as 200 and ResourceExhausted as 429.
func TestGRPCRedisStopped(t *testing.T) {
	noLeaks(t)
	server := redistest.NewServer(t)
	s := newStack(t, newClient(t, server.Addr()), true, fallback.WithInstances(2))

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer(grpc.UnaryInterceptor(grpcmw.UnaryServerInterceptor(s.timed, grpcmw.WithLimit(outageLimit))))
	healthpb.RegisterHealthServer(gs, health.NewServer())
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	t.Cleanup(func() {
		gs.Stop()
		require.NoError(t, <-served)
	})
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	hc := healthpb.NewHealthClient(conn)

	outage(t, server, s, true, outageWorkers, time.Second, func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		switch status.Code(err) {
		case codes.OK:
			return 200
		case codes.ResourceExhausted:
			return 429
		}
		return 500 + int(status.Code(err))
	})
}
