package bench

import (
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"google.golang.org/grpc"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/rules"
)

// BenchmarkRules measures what deciding through a rules file (WithRules) costs over the
// same limits given in Go, on the local backend, every request allowed: "go" gives one
// limit with WithLimit (two with WithLimits, "go2"), "rules" the same limit from a
// policy that the second of two rules selects by route ("rules2": a policy of the two
// limits). The key is the client address in every case: the middleware's own on Gin and
// net/http (a policy that names no key), a key function on gRPC.
func BenchmarkRules(b *testing.B) {
	gin.SetMode(gin.ReleaseMode)
	// the highest rate a KeepUsage token bucket takes
	limit := ratelimit.Limit{Rate: 1e6, Burst: 1e9}
	loose := ratelimit.Limit{Rate: 1e6, Burst: 2e9}
	for _, fw := range []struct {
		name  string
		serve func(b *testing.B, l ratelimit.Limiter, how string, limits []ratelimit.Limit, live *rules.Rules) func() int
	}{{"gin", rulesGin}, {"http", rulesHTTP}, {"grpc", rulesGRPC}} {
		for _, how := range []string{"go", "rules", "go2", "rules2"} {
			b.Run(fw.name+"/"+how, func(b *testing.B) {
				l := local.New()
				b.Cleanup(func() { _ = l.Close() })
				limits := []ratelimit.Limit{limit}
				if how == "go2" || how == "rules2" {
					limits = append(limits, loose)
				}
				var live *rules.Rules
				if how == "rules" || how == "rules2" {
					live = benchRules(b, fw.name, limits)
				}
				benchRequests(b, fw.serve(b, l, how, limits, live), 200)
			})
		}
	}
}

// benchRules returns rules whose policy "items", keyed by the client address, has limits,
// for the route of the framework's benchmark, behind a rule for another route.
func benchRules(b *testing.B, fw string, limits []ratelimit.Limit) *rules.Rules {
	route := map[string]string{"gin": "/items/:id", "http": "GET /items/{id}", "grpc": "/bench.S/M"}[fw]
	text := ""
	for i, l := range limits {
		if i > 0 {
			text += ", "
		}
		text += `"` + l.String() + `"`
	}
	key := `` // the middleware's key, as WithLimit's
	if fw == "grpc" {
		key = `, "key": "client-ip"` // the key function WithKeyFunc gives the Go side
	}
	file := `{"policies": {
  "login": {"limits": ["5/min"], "key": "client-ip"},
  "items": {"limits": [` + text + `]` + key + `}},
 "rules": [
  {"match": {"route": "POST /login"}, "policy": "login"},
  {"match": {"route": "` + route + `"}, "policy": "items"}]}`
	live := rules.New(rules.Registry{
		"client-ip": rules.HTTPKey(httpkeys.ClientIP()),
	})
	if fw == "grpc" {
		live = rules.New(rules.Registry{
			"client-ip": func(rules.Request) (string, error) { return "ip:192.0.2.1", nil },
		})
	}
	if err := live.Load("bench.json", []byte(file)); err != nil {
		b.Fatal(err)
	}
	return live
}

// goLimits returns the limits under the policy "items", for WithLimits.
func goLimits(key string, limits []ratelimit.Limit) []ratelimit.Request {
	reqs := make([]ratelimit.Request, len(limits))
	for i, l := range limits {
		reqs[i] = ratelimit.Request{Key: key, Limit: l, Name: "items"}
	}
	return reqs
}

func rulesGin(b *testing.B, l ratelimit.Limiter, how string, limits []ratelimit.Limit, live *rules.Rules) func() int {
	key := httpkeys.ClientIP()
	var mw gin.HandlerFunc
	switch how {
	case "go":
		mw = ginmw.New(l, ginmw.WithLimit(limits[0]), ginmw.WithPolicyName("items"))
	case "go2":
		mw = ginmw.New(l, ginmw.WithLimits(func(c *gin.Context) []ratelimit.Request {
			k, _ := key(c.Request)
			return goLimits(k, limits)
		}))
	default:
		mw = ginmw.New(l, ginmw.WithRules(live))
	}
	r := gin.New()
	r.GET("/items/:id", mw, func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	return recorded(r)
}

func rulesHTTP(b *testing.B, l ratelimit.Limiter, how string, limits []ratelimit.Limit, live *rules.Rules) func() int {
	key := httpkeys.ClientIP()
	var mw func(http.Handler) http.Handler
	switch how {
	case "go":
		mw = httpmw.New(l, httpmw.WithLimit(limits[0]), httpmw.WithPolicyName("items"))
	case "go2":
		mw = httpmw.New(l, httpmw.WithLimits(func(r *http.Request) []ratelimit.Request {
			k, _ := key(r)
			return goLimits(k, limits)
		}))
	default:
		mw = httpmw.New(l, httpmw.WithRules(live))
	}
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })))
	return recorded(mux)
}

func rulesGRPC(b *testing.B, l ratelimit.Limiter, how string, limits []ratelimit.Limit, live *rules.Rules) func() int {
	handler := func(context.Context, any) (any, error) { return "ok", nil }
	info := &grpc.UnaryServerInfo{FullMethod: "/bench.S/M"}
	ctx := grpc.NewContextWithServerTransportStream(context.Background(), &trailerSink{})
	key := func(context.Context, string) (string, error) { return "ip:192.0.2.1", nil }
	var icpt grpc.UnaryServerInterceptor
	switch how {
	case "go":
		icpt = grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimit(limits[0]), grpcmw.WithKeyFunc(key), grpcmw.WithPolicyName("items"))
	case "go2":
		icpt = grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimits(func(context.Context, string) []ratelimit.Request {
			return goLimits("ip:192.0.2.1", limits)
		}))
	default:
		icpt = grpcmw.UnaryServerInterceptor(l, grpcmw.WithRules(live))
	}
	return func() int {
		if _, err := icpt(ctx, "req", info, handler); err != nil {
			return 429
		}
		return 200
	}
}

// BenchmarkRulesMatch measures the work WithRules adds to a request over limits given in
// Go: reading the set in force, finding the policy (here by the second of two rules) and
// the key function's call (here one that returns a constant, so that only the rules' part
// is timed).
func BenchmarkRulesMatch(b *testing.B) {
	live := rules.New(rules.Registry{"client-ip": func(rules.Request) (string, error) { return "ip:192.0.2.1", nil }})
	if err := live.Load("bench.json", []byte(`{"policies": {
  "login": {"limits": ["5/min"], "key": "client-ip"},
  "items": {"limits": ["100/s"], "key": "client-ip"}},
 "rules": [
  {"match": {"route": "POST /login"}, "policy": "login"},
  {"match": {"route": "GET /items/{id}"}, "policy": "items"}]}`)); err != nil {
		b.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, "/items/1", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		p := live.Set().Match(rules.FromHTTP(req, "GET /items/{id}"))
		if p == nil || p.Name != "items" {
			b.Fatal("no policy")
		}
		if key, err := p.KeyOf(rules.FromHTTP(req, "GET /items/{id}")); err != nil || key == "" {
			b.Fatal("no key")
		}
	}
}
