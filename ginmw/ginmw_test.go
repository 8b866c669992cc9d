package ginmw_test

import (
	"net/http"
	"net/netip"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/keyfuncs"
)

// PerMinute(2) is a bucket of 2 tokens refilled one per 30 s. Two requests at once empty it;
// the third is denied until the first token is back, 30 s later.
func TestPerMinuteTwo(t *testing.T) {
	l, clock := newLimiter(t)
	r := newRouter(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(2))))

	w := perform(r, http.MethodGet, "/v1/items/1", client)
	assert.Equal(t, http.StatusOK, w.Code)
	// One token left; the spent one is back in 30 s, so the bucket is full in 30 s.
	assert.Equal(t, [6]string{"", "2", "1", "30", "", ""}, rateHeaders(w))

	w = perform(r, http.MethodGet, "/v1/items/1", client)
	assert.Equal(t, http.StatusOK, w.Code)
	// Empty: full again after two refills, 60 s.
	assert.Equal(t, [6]string{"", "2", "0", "60", "", ""}, rateHeaders(w))

	w = perform(r, http.MethodGet, "/v1/items/1", client)
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, [6]string{"30", "2", "0", "60", "", ""}, rateHeaders(w))
	assert.JSONEq(t, `{"error":"rate limit exceeded","retry_after":30}`, w.Body.String())
	assert.Equal(t, `{"error":"rate limit exceeded","retry_after":30}`, w.Body.String())

	// 29.9 s later the token is not back yet: Retry-After 0.1 s, rounded up to 1.
	clock.Advance(29900 * time.Millisecond)
	w = perform(r, http.MethodGet, "/v1/items/1", client)
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))

	clock.Advance(100 * time.Millisecond)
	assert.Equal(t, http.StatusOK, perform(r, http.MethodGet, "/v1/items/1", client).Code)
}

func TestHeaderStyles(t *testing.T) {
	tests := []struct {
		style   headers.Style
		allowed [6]string // first request
		denied  [6]string // third request
	}{
		{headers.StyleXRateLimit,
			[6]string{"", "2", "1", "30", "", ""},
			[6]string{"30", "2", "0", "60", "", ""}},
		{headers.StyleIETF,
			[6]string{"", "", "", "", `"api";q=2;w=60`, `"api";r=1;t=30`},
			[6]string{"30", "", "", "", `"api";q=2;w=60`, `"api";r=0;t=30`}}, // t = Retry-After
		{headers.StyleBoth,
			[6]string{"", "2", "1", "30", `"api";q=2;w=60`, `"api";r=1;t=30`},
			[6]string{"30", "2", "0", "60", `"api";q=2;w=60`, `"api";r=0;t=30`}},
		{headers.StyleNone,
			[6]string{"", "", "", "", "", ""},
			[6]string{"30", "", "", "", "", ""}}, // Retry-After whatever the style
	}
	for _, tt := range tests {
		t.Run(tt.style.String(), func(t *testing.T) {
			l, _ := newLimiter(t)
			r := newRouter(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(2)),
				ginmw.WithHeaderStyle(tt.style), ginmw.WithPolicyName("api")))
			assert.Equal(t, tt.allowed, rateHeaders(perform(r, http.MethodGet, "/v1/items/1", client)))
			perform(r, http.MethodGet, "/v1/items/1", client)
			assert.Equal(t, tt.denied, rateHeaders(perform(r, http.MethodGet, "/v1/items/1", client)))
		})
	}
}

func TestClientKeys(t *testing.T) {
	proxy := keyfuncs.WithTrustedProxies(netip.MustParsePrefix("10.0.0.0/8"))
	tests := []struct {
		name   string
		key    keyfuncs.Func
		remote func(i int) string
		header func(i int) []string
		want   []int
	}{
		// A client rotating X-Forwarded-For from one untrusted address stays in one bucket.
		{"spoofed xff, default key", nil,
			func(int) string { return client },
			func(i int) []string {
				return []string{"X-Forwarded-For", netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}).String()}
			},
			[]int{200, 200, 429, 429}},
		{"spoofed xff, proxies trusted but peer is not one", keyfuncs.ClientIP(proxy),
			func(int) string { return client },
			func(i int) []string {
				return []string{"X-Forwarded-For", netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}).String()}
			},
			[]int{200, 200, 429, 429}},
		// The same header from a trusted proxy names four different clients.
		{"xff from trusted proxy", keyfuncs.ClientIP(proxy),
			func(int) string { return "10.0.0.2:443" },
			func(i int) []string {
				return []string{"X-Forwarded-For", netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}).String()}
			},
			[]int{200, 200, 200, 200}},
		// ...and one client behind it is limited, whatever it prepends.
		{"one client behind trusted proxy", keyfuncs.ClientIP(proxy),
			func(int) string { return "10.0.0.2:443" },
			func(i int) []string {
				return []string{"X-Forwarded-For", netip.AddrFrom4([4]byte{1, 1, 1, byte(i)}).String() + ", 198.51.100.1"}
			},
			[]int{200, 200, 429, 429}},
		// Addresses in one /64 share a bucket.
		{"ipv6 same /64", nil,
			func(i int) string { return "[2001:db8:1:2::" + string(rune('a'+i)) + "]:443" },
			func(int) []string { return nil },
			[]int{200, 200, 429, 429}},
		{"ipv6 different /64s", nil,
			func(i int) string { return "[2001:db8:1:" + string(rune('a'+i)) + "::1]:443" },
			func(int) []string { return nil },
			[]int{200, 200, 200, 200}},
		{"ipv6 per address", keyfuncs.ClientIP(keyfuncs.WithIPv6Prefix(128)),
			func(i int) string { return "[2001:db8:1:2::" + string(rune('a'+i)) + "]:443" },
			func(int) []string { return nil },
			[]int{200, 200, 200, 200}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := newLimiter(t)
			r := newRouter(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(2)), ginmw.WithKeyFunc(tt.key)))
			got := make([]int, len(tt.want))
			for i := range got {
				got[i] = perform(r, http.MethodGet, "/v1/items/1", tt.remote(i), tt.header(i)...).Code
			}
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestDeniedHandler(t *testing.T) {
	l, _ := newLimiter(t)
	var got ratelimit.Result
	r := newRouter(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(1)),
		ginmw.WithDeniedHandler(func(c *gin.Context, res ratelimit.Result) {
			got = res
			c.String(http.StatusServiceUnavailable, "slow down")
		})))
	perform(r, http.MethodGet, "/v1/items/1", client)
	w := perform(r, http.MethodGet, "/v1/items/1", client)
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "slow down", w.Body.String()) // the route's "ok" did not run
	assert.Equal(t, "60", w.Header().Get("Retry-After"), "headers are set before the handler runs")
	assert.Equal(t, ratelimit.Result{Limit: ratelimit.PerMinute(1), RetryAfter: time.Minute, ResetAfter: time.Minute}, got)
}

// Per-route limits: a strict login route and a generous API group on one limiter and one key.
func TestPerRouteLimitsOnGroups(t *testing.T) {
	l, _ := newLimiter(t)
	r := gin.New()
	ok := func(c *gin.Context) { c.String(http.StatusOK, "ok") }
	r.POST("/login", ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(1))), ok)
	api := r.Group("/api", ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(3))))
	api.GET("/a", ok)
	api.GET("/b", ok)
	r.GET("/free", ok)

	do := func(method, path string) int { return perform(r, method, path, client).Code }
	assert.Equal(t, []int{200, 429}, []int{do("POST", "/login"), do("POST", "/login")})
	// The group's routes share the group's bucket, untouched by the login bucket.
	assert.Equal(t, []int{200, 200, 200, 429}, []int{do("GET", "/api/a"), do("GET", "/api/b"), do("GET", "/api/a"), do("GET", "/api/b")})
	assert.Equal(t, []int{200, 200, 200}, []int{do("GET", "/free"), do("GET", "/free"), do("GET", "/free")})
}

func TestLimitFunc(t *testing.T) {
	l, _ := newLimiter(t)
	r := newRouter(ginmw.New(l, ginmw.WithLimitFunc(func(c *gin.Context) ratelimit.Limit {
		if c.FullPath() == "/health" {
			return ratelimit.Limit{} // zero: not limited
		}
		return ratelimit.PerMinute(1)
	})))
	for range 5 {
		w := perform(r, http.MethodGet, "/health", client)
		require.Equal(t, http.StatusOK, w.Code)
		require.Equal(t, [6]string{}, rateHeaders(w), "an unlimited request gets no headers")
	}
	assert.Equal(t, []int{200, 429}, codes(r, 2, client))
}

// The zero Limit from a limit function means "not limited" (a fixed one is refused: see
// TestNewPanics).
func TestZeroLimitFromFuncPasses(t *testing.T) {
	l, _ := newLimiter(t)
	r := newRouter(ginmw.New(l, ginmw.WithLimitFunc(func(*gin.Context) ratelimit.Limit { return ratelimit.Limit{} })))
	assert.Equal(t, []int{200, 200, 200, 200}, codes(r, 4, client))
}

func TestCostFunc(t *testing.T) {
	l, _ := newLimiter(t)
	// PerMinute(3): 3 tokens, one back every 20 s. The cost is the ?n= query value.
	r := newRouter(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(3)),
		ginmw.WithCostFunc(func(c *gin.Context) int {
			switch c.Query("n") {
			case "2":
				return 2
			case "4":
				return 4
			case "0":
				return 0
			}
			return 1
		})))
	w := perform(r, http.MethodGet, "/v1/items/1?n=2", client)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "1", w.Header().Get("X-RateLimit-Remaining"))
	// 2 more are needed and 1 is there: the second token is back in 20 s. A denial takes nothing.
	w = perform(r, http.MethodGet, "/v1/items/1?n=2", client)
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, "20", w.Header().Get("Retry-After"))
	assert.Equal(t, http.StatusOK, perform(r, http.MethodGet, "/v1/items/1", client).Code, "cost 1 still fits")

	// More than Burst can never pass: 429 even though the policy is fail open.
	var reported error
	r = newRouter(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(3)),
		ginmw.WithCostFunc(func(*gin.Context) int { return 4 }),
		ginmw.WithErrorHandler(func(_ *gin.Context, err error) { reported = err })))
	w = perform(r, http.MethodGet, "/v1/items/1", "192.0.2.50:1")
	assert.Equal(t, http.StatusTooManyRequests, w.Code)
	assert.Equal(t, `{"error":"request cost exceeds the rate limit"}`, w.Body.String())
	assert.Empty(t, w.Header().Get("Retry-After"), "no wait makes it pass")
	assert.ErrorIs(t, reported, ratelimit.ErrExceedsBurst)
}

func TestSkipFunc(t *testing.T) {
	l, _ := newLimiter(t)
	r := newRouter(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(1)),
		ginmw.WithSkipFunc(func(c *gin.Context) bool { return c.GetHeader("X-Internal") == "yes" })))
	for range 3 {
		w := perform(r, http.MethodGet, "/v1/items/1", client, "X-Internal", "yes")
		require.Equal(t, http.StatusOK, w.Code)
		require.Equal(t, [6]string{}, rateHeaders(w))
	}
	assert.Equal(t, []int{200, 429}, codes(r, 2, client), "skipped requests took no tokens")
}

// Policies own their buckets: two routes with the same limit, for the same client, keep a
// bucket each; each route is named by its pattern in RateLimit-Policy.
func TestRoutesKeepTheirBuckets(t *testing.T) {
	l, _ := newLimiter(t)
	r := newRouter(ginmw.New(l, ginmw.WithRouteLimits(map[string]ratelimit.Limit{
		"/login": ratelimit.PerMinute(1), "/v1/items/:id": ratelimit.PerMinute(1),
	}, ratelimit.Limit{}), ginmw.WithHeaderStyle(headers.StyleIETF)))
	w := perform(r, http.MethodPost, "/login", client)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, `"/login";q=1;w=60`, w.Header().Get("RateLimit-Policy"))
	assert.Equal(t, []int{200, 429}, codes(r, 2, client), "/v1/items/1 has a bucket of its own")
	assert.Equal(t, http.StatusTooManyRequests, perform(r, http.MethodPost, "/login", client).Code)
}
