package ratelimit_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gin-gonic/gin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/local"
)

// A timeline: Rate 1/s, Burst 2, requests A, B and C at 0.1 s and D at 1.5 s. The
// limiter reads a hand-moved clock so that the output is the same on every run.
func Example() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	defer limiter.Close()

	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	for _, req := range []struct {
		name string
		at   time.Duration
	}{{"A", 100 * time.Millisecond}, {"B", 100 * time.Millisecond}, {"C", 100 * time.Millisecond}, {"D", 1500 * time.Millisecond}} {
		now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(req.at)
		res, err := limiter.Allow(context.Background(), "client", limit)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("%s at %v: allowed=%t remaining=%d retry-after=%v\n",
			req.name, req.at, res.Allowed, res.Remaining, res.RetryAfter)
	}
	// Output:
	// A at 100ms: allowed=true remaining=1 retry-after=0s
	// B at 100ms: allowed=true remaining=0 retry-after=0s
	// C at 100ms: allowed=false remaining=0 retry-after=1s
	// D at 1.5s: allowed=true remaining=0 retry-after=0s
}

// Errors are told apart with errors.Is; a denial is not an error.
func ExampleLimit_Validate() {
	for _, l := range []ratelimit.Limit{ratelimit.PerMinute(100), {Rate: 0, Burst: 5}, {}} {
		fmt.Println(l, "→", l.Validate())
	}
	// Output:
	// 100/min → <nil>
	// 0/s burst 5 → ratelimit: invalid limit: rate 0 is not a finite number greater than zero
	// 0/s burst 0 → ratelimit: invalid limit: rate 0 is not a finite number greater than zero
}

// Limiting a Gin API: PerMinute(2) per client address, so the third request in a row is
// denied with Retry-After 30 (one token comes back every 30 s). The limiter reads a fixed
// clock so that the output is the same on every run.
func Example_gin() {
	gin.SetMode(gin.ReleaseMode)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	defer limiter.Close()

	r := gin.New()
	r.Use(ginmw.New(limiter, ginmw.WithLimit(ratelimit.PerMinute(2))))
	r.GET("/hello", func(c *gin.Context) { c.String(http.StatusOK, "hello") })

	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/hello", nil)
		req.RemoteAddr = "203.0.113.9:50000"
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		fmt.Printf("%d remaining=%s retry-after=%q %s\n", w.Code,
			w.Header().Get("X-RateLimit-Remaining"), w.Header().Get("Retry-After"), w.Body.String())
	}
	// Output:
	// 200 remaining=1 retry-after="" hello
	// 200 remaining=0 retry-after="" hello
	// 429 remaining=0 retry-after="30" {"error":"rate limit exceeded","retry_after":30}
}

// Limiting a gRPC service: PerMinute(2) per method on grpc-go's health service, served over
// an in-memory connection. The third call in a row is denied with ResourceExhausted, a
// RetryInfo of 30 s (one token comes back every 30 s) and the grpc-retry-pushback-ms
// trailer, which grpc-go clients with a retry policy obey. The limiter reads a fixed clock
// so that the output is the same on every run.
func Example_grpc() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	defer limiter.Close()

	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(
		grpcmw.UnaryServerInterceptor(limiter, grpcmw.WithLimit(ratelimit.PerMinute(2)))))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis := bufconn.Listen(1 << 16)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	conn, err := grpc.NewClient("passthrough:///health",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer conn.Close()

	client := healthpb.NewHealthClient(conn)
	for range 3 {
		var trailer metadata.MD
		_, err := client.Check(context.Background(), &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
		delay, _ := grpcmw.RetryDelay(err)
		fmt.Printf("%v %q retry-delay=%v pushback-ms=%v\n", status.Code(err), status.Convert(err).Message(),
			delay, trailer.Get(grpcmw.PushbackKey))
	}
	// Output:
	// OK "" retry-delay=0s pushback-ms=[]
	// OK "" retry-delay=0s pushback-ms=[]
	// ResourceExhausted "rate limit exceeded" retry-delay=30s pushback-ms=[30000]
}

// A limit is text too: a flag, a configuration field, an environment variable.
func ExampleParseLimit() {
	for _, s := range []string{"100/min", "10/s burst 20", "1000/day", "0.5/s", "10/week"} {
		l, err := ratelimit.ParseLimit(s)
		fmt.Printf("%-14s rate %.6g/s burst %d, written %q, err %v\n", s, l.Rate, l.Burst, l.String(), err)
	}
	// Output:
	// 100/min        rate 1.66667/s burst 100, written "100/min", err <nil>
	// 10/s burst 20  rate 10/s burst 20, written "10/s burst 20", err <nil>
	// 1000/day       rate 0.0115741/s burst 1000, written "1000/day", err <nil>
	// 0.5/s          rate 0.5/s burst 1, written "30/min burst 1", err <nil>
	// 10/week        rate 0/s burst 0, written "0/s burst 0", err ratelimit: invalid limit: "10/week": "week" is a calendar period: a quota names its time zone, as in 10/week@UTC
}

// A calendar quota: 10,000 a day from midnight in Paris, whatever that is in UTC, and a
// billing month from the 15th; as values, and as text.
func ExampleQuota() {
	day := ratelimit.Quota(10000, ratelimit.Period{Unit: ratelimit.Day, Zone: "Europe/Paris"})
	fmt.Println(day)
	month, err := ratelimit.ParseLimit("1000000/month@UTC anchor 15")
	if err != nil {
		panic(err)
	}
	fmt.Println(month == ratelimit.Quota(1_000_000, ratelimit.Period{Unit: ratelimit.Month, Anchor: 15, Zone: "UTC"}))
	// Output:
	// 10000/day@Europe/Paris
	// true
}
