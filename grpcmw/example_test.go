package grpcmw_test

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/local"
)

// A method limited to 2 calls a minute, the interceptor called as a server would call it.
// The limiter reads a fixed clock so that the output is the same on every run.
func ExampleUnaryServerInterceptor() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	defer limiter.Close()

	icpt := grpcmw.UnaryServerInterceptor(limiter, grpcmw.WithMethodLimits(map[string]ratelimit.Limit{
		"/shop.Cart/Checkout": ratelimit.PerMinute(2),
	}, ratelimit.PerSecond(100)))
	info := &grpc.UnaryServerInfo{FullMethod: "/shop.Cart/Checkout"}
	handler := func(context.Context, any) (any, error) { return "done", nil }

	for range 3 {
		_, err := icpt(context.Background(), "req", info, handler)
		delay, _ := grpcmw.RetryDelay(err)
		fmt.Println(status.Code(err), delay)
	}
	// Output:
	// OK 0s
	// OK 0s
	// ResourceExhausted 30s
}
