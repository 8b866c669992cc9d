package ginmw_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/keyfuncs"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/priority"
)

// A strict limit on one route and a generous one on a group, keyed by the client address
// behind a load balancer in 10.0.0.0/8. The limiter reads a fixed clock so that the output
// is the same on every run.
func ExampleNew() {
	gin.SetMode(gin.ReleaseMode)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	defer limiter.Close()

	byClient := ginmw.WithKeyFunc(keyfuncs.ClientIP(
		keyfuncs.WithTrustedProxies(netip.MustParsePrefix("10.0.0.0/8"))))
	r := gin.New()
	r.POST("/login", ginmw.New(limiter, byClient, ginmw.WithLimit(ratelimit.PerMinute(2)),
		ginmw.WithHeaderStyle(headers.StyleIETF), ginmw.WithPolicyName("login")),
		func(c *gin.Context) { c.String(http.StatusOK, "welcome") })

	for range 3 {
		req := httptest.NewRequest(http.MethodPost, "/login", nil)
		req.RemoteAddr = "10.0.0.2:443" // the load balancer
		req.Header.Set("X-Forwarded-For", "198.51.100.7")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		fmt.Println(w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"), w.Body.String())
	}
	// Output:
	// 200 "login";r=1;t=30  welcome
	// 200 "login";r=0;t=60  welcome
	// 429 "login";r=0;t=30 30 {"error":"rate limit exceeded","retry_after":30}
}

// Logins and payments are critical, statistics sheddable, the rest normal: when the bucket
// of a client runs low, /stats is refused first, with a Retry-After of its own, while /login
// still passes. The reserves are the limiter's (local.WithReserves, distributed.WithReserves;
// the defaults keep half the burst from sheddable requests and a tenth from normal ones):
// here 2 of the 4 tokens a minute are kept from /stats.
func ExampleWithPriorityFunc() {
	gin.SetMode(gin.ReleaseMode)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	defer limiter.Close()

	byRoute := ginmw.WithPriorityFunc(func(c *gin.Context) priority.Level {
		switch c.FullPath() {
		case "/login", "/pay":
			return priority.Critical
		case "/stats":
			return priority.Sheddable
		}
		return priority.Normal
	})
	r := gin.New()
	r.Use(ginmw.New(limiter, ginmw.WithLimit(ratelimit.PerMinute(4)), byRoute))
	r.POST("/login", func(c *gin.Context) { c.String(http.StatusOK, "welcome") })
	r.GET("/stats", func(c *gin.Context) { c.String(http.StatusOK, "{}") })

	for _, route := range []string{"/stats", "/stats", "/stats", "/login", "/login", "/login"} {
		method := http.MethodGet
		if route == "/login" {
			method = http.MethodPost
		}
		req := httptest.NewRequest(method, route, nil)
		req.RemoteAddr = "198.51.100.7:50000"
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		fmt.Println(route, w.Code, "remaining", w.Header().Get("X-RateLimit-Remaining"))
	}
	// Output:
	// /stats 200 remaining 1
	// /stats 200 remaining 0
	// /stats 429 remaining 0
	// /login 200 remaining 1
	// /login 200 remaining 0
	// /login 429 remaining 0
}
