// Command grpc runs a gRPC server whose health service is rate-limited, and a client that
// calls it until it is limited.
//
// The server allows 5 Check calls a minute per client address (failing closed) and 60
// Watch streams a minute (failing open). The client limits itself too, to 10 calls a
// second, waiting for its turn rather than failing, so that a burst of its own never
// reaches the server.
//
// By default the buckets live in memory (package local); -redis switches the server to a
// Redis server, so that several instances share one limit:
//
//	go run ./examples/grpc                        # server and client, 7 calls
//	go run ./examples/grpc -redis localhost:6379
//	go run ./examples/grpc -serve                 # the server only, then from another terminal:
//	grpcurl -plaintext localhost:50051 grpc.health.v1.Health/Check
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/keyfuncs/grpckeys"
	"github.com/sluice-go/ratelimit/local"
)

// The methods of grpc-go's health service.
const (
	methodCheck = "/grpc.health.v1.Health/Check"
	methodWatch = "/grpc.health.v1.Health/Watch"
)

func main() {
	addr := flag.String("addr", "localhost:50051", "address to listen on")
	redisAddr := flag.String("redis", "", "Redis address (host:port); empty keeps the buckets in memory")
	serveOnly := flag.Bool("serve", false, "run the server only, until interrupted")
	calls := flag.Int("calls", 7, "number of Check calls the client makes")
	flag.Parse()

	limiter, closeLimiter, err := newLimiter(*redisAddr)
	if err != nil {
		log.Fatalf("grpc example: %v", err)
	}
	defer closeLimiter()

	lis, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("grpc example: %v", err)
	}
	srv := newServer(limiter)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	log.Printf("grpc example: listening on %s (limiter: %s)", lis.Addr(), backendName(*redisAddr))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *serveOnly {
		<-ctx.Done()
		return
	}
	self := local.New()
	defer self.Close()
	if err := runClient(ctx, lis.Addr().String(), self, *calls, os.Stdout); err != nil {
		log.Fatalf("grpc example: %v", err)
	}
}

// newServer returns a server with the health service, limited per client address and
// method.
func newServer(limiter ratelimit.Limiter) *grpc.Server {
	opts := []grpcmw.Option{
		grpcmw.WithKeyFunc(grpckeys.Compose(grpckeys.PeerIP(), grpckeys.FullMethod())),
		grpcmw.WithMethodLimits(map[string]ratelimit.Limit{
			methodCheck: ratelimit.PerMinute(5),
			methodWatch: ratelimit.PerMinute(60),
		}, ratelimit.PerMinute(60)),
		grpcmw.WithHeaderStyle(headers.StyleXRateLimit),
	}
	srv := grpc.NewServer(
		// Check is cheap to answer but the example treats it like a login: fail closed.
		grpc.ChainUnaryInterceptor(grpcmw.UnaryServerInterceptor(limiter,
			append(opts, grpcmw.WithFailClosed())...)),
		// Streams are checked once, when they open.
		grpc.ChainStreamInterceptor(grpcmw.StreamServerInterceptor(limiter, opts...)))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	return srv
}

// runClient calls Check n times at addr, limiting itself with self, and prints each outcome.
func runClient(ctx context.Context, addr string, self ratelimit.Limiter, n int, out io.Writer) error {
	conn, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// Be a polite client: at most 10 calls a second, waiting for a turn instead of failing.
		grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(self,
			grpcmw.WithLimit(ratelimit.PerSecond(10)), grpcmw.WithWait())))
	if err != nil {
		return err
	}
	defer conn.Close()

	client := healthpb.NewHealthClient(conn)
	for i := 1; i <= n; i++ {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var trailer metadata.MD
		res, err := client.Check(callCtx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
		cancel()
		switch {
		case err == nil:
			fmt.Fprintf(out, "call %d: %v, %s calls left\n", i, res.GetStatus(), first(trailer, "x-ratelimit-remaining"))
		case status.Code(err) == codes.ResourceExhausted:
			delay, _ := grpcmw.RetryDelay(err)
			fmt.Fprintf(out, "call %d: %v: %s; retry in %v (pushback %s ms)\n", i, status.Code(err),
				status.Convert(err).Message(), delay, first(trailer, grpcmw.PushbackKey))
		default:
			return fmt.Errorf("call %d: %w", i, err)
		}
	}
	return nil
}

// first returns the first value of key in md, or "".
func first(md metadata.MD, key string) string {
	if v := md.Get(key); len(v) > 0 {
		return v[0]
	}
	return ""
}

// newLimiter returns the in-memory limiter, or a Redis limiter when redisAddr is set, and a
// function that releases it.
func newLimiter(redisAddr string) (ratelimit.Limiter, func(), error) {
	if redisAddr == "" {
		l := local.New()
		return l, func() { _ = l.Close() }, nil
	}
	// ContextTimeoutEnabled lets the limiter's short per-call timeout cut a stalled read.
	client := redis.NewClient(&redis.Options{Addr: redisAddr, ContextTimeoutEnabled: true})
	l, err := distributed.New(client, distributed.WithPrefix("grpc-example:"))
	if err != nil {
		_ = client.Close()
		return nil, nil, err
	}
	return l, func() { _ = l.Close(); _ = client.Close() }, nil
}

func backendName(redisAddr string) string {
	if redisAddr == "" {
		return "in memory"
	}
	return "Redis at " + redisAddr
}
