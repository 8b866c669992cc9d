package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/local"
)

// BenchmarkMiddleware measures what each middleware adds to a request, on the local backend:
// the same route served with no middleware ("none"), with every request allowed ("allow")
// and with every request denied ("deny", the bucket drained before the timer). HTTP
// requests go through the framework's ServeHTTP with a recorder, and gRPC calls through the
// interceptor as the server calls it, so that the figures hold the middleware and the
// framework, not a network. Subtract "none" from the others for the middleware's share.
func BenchmarkMiddleware(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	for _, tr := range traffics() {
		for _, fw := range []struct {
			name  string
			serve func(b *testing.B, l ratelimit.Limiter, limit ratelimit.Limit) func() int
		}{{"gin", serveGin}, {"http", serveHTTP}, {"grpc", serveGRPC}} {
			b.Run(fw.name+"/none", func(b *testing.B) {
				if tr.allow {
					benchRequests(b, fw.serve(b, nil, tr.limit), 200)
				} else {
					b.Skip("without middleware nothing is denied: see allow")
				}
			})
			b.Run(fw.name+"/"+tr.name, func(b *testing.B) {
				l := local.New()
				b.Cleanup(func() { _ = l.Close() })
				do, want := fw.serve(b, l, tr.limit), 200
				if !tr.allow {
					want = 429
					drainWith(b, do)
				}
				benchRequests(b, do, want)
			})
		}
	}
}

// drainWith makes one request with do, which takes the one token of a deny traffic's
// bucket through the middleware itself (whatever bucket key the middleware builds), so
// that the timed requests are denied.
func drainWith(b *testing.B, do func() int) {
	if got := do(); got != 200 {
		b.Fatalf("first request: status %d, want 200", got)
	}
}

// benchRequests times do, which returns each request's status (HTTP, or 200/429 for gRPC),
// and checks it is want.
func benchRequests(b *testing.B, do func() int, want int) {
	b.ReportAllocs()
	for b.Loop() {
		if got := do(); got != want {
			b.Fatalf("status %d, want %d", got, want)
		}
	}
}

const remoteAddr = "192.0.2.1:40000"

func serveGin(b *testing.B, l ratelimit.Limiter, limit ratelimit.Limit) func() int {
	r := gin.New()
	handler := func(c *gin.Context) { c.String(http.StatusOK, "ok") }
	if l == nil {
		r.GET("/items/:id", handler)
	} else {
		r.GET("/items/:id", ginmw.New(l, ginmw.WithLimit(limit)), handler)
	}
	return recorded(r)
}

func serveHTTP(b *testing.B, l ratelimit.Limiter, limit ratelimit.Limit) func() int {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	if l != nil {
		h = httpmw.New(l, httpmw.WithLimit(limit))(h)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", h)
	return recorded(mux)
}

// recorded returns a function that serves one GET /items/1 from remoteAddr with h. The
// request is made once; each call has a recorder of its own, whose cost is in "none" too.
func recorded(h http.Handler) func() int {
	req := httptest.NewRequest(http.MethodGet, "/items/1", nil)
	req.RemoteAddr = remoteAddr
	return func() int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
}

func serveGRPC(b *testing.B, l ratelimit.Limiter, limit ratelimit.Limit) func() int {
	handler := func(context.Context, any) (any, error) { return "ok", nil }
	info := &grpc.UnaryServerInfo{FullMethod: "/bench.S/M"}
	ctx := grpc.NewContextWithServerTransportStream(context.Background(), &trailerSink{})
	if l == nil {
		return func() int {
			if _, err := handler(ctx, "req"); err != nil {
				return 500
			}
			return 200
		}
	}
	icpt := grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimit(limit),
		grpcmw.WithKeyFunc(func(context.Context, string) (string, error) { return "ip:192.0.2.1", nil }))
	return func() int {
		if _, err := icpt(ctx, "req", info, handler); err != nil {
			return 429
		}
		return 200
	}
}

// trailerSink is the transport stream of a server call, which takes the trailer and drops it.
type trailerSink struct{}

func (*trailerSink) Method() string                  { return "/bench.S/M" }
func (*trailerSink) SetHeader(metadata.MD) error     { return nil }
func (*trailerSink) SendHeader(metadata.MD) error    { return nil }
func (*trailerSink) SetTrailer(md metadata.MD) error { return nil }
