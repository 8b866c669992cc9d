package ginmw_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	m.Run()
}

// newLimiter returns a local limiter reading a clock that moves only when the test says.
func newLimiter(t *testing.T) (*local.Limiter, *ratelimittest.Clock) {
	clock := ratelimittest.NewClock()
	l := local.New(local.WithClock(clock.Now))
	t.Cleanup(func() { _ = l.Close() })
	return l, clock
}

// newRouter returns an engine with mw on every route: GET /v1/items/:id, POST /login and
// GET /health, each answering 200 "ok".
func newRouter(mw gin.HandlerFunc) *gin.Engine {
	r := gin.New()
	r.Use(mw)
	ok := func(c *gin.Context) { c.String(http.StatusOK, "ok") }
	r.GET("/v1/items/:id", ok)
	r.POST("/login", ok)
	r.GET("/health", ok)
	return r
}

// client is the socket address requests come from unless a test says otherwise.
const client = "203.0.113.9:40000"

// perform sends a request from remoteAddr with header lines given as name, value pairs.
func perform(r http.Handler, method, path, remoteAddr string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = remoteAddr
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w
}

// codes sends n GET /v1/items/1 requests from remoteAddr and returns their status codes.
func codes(r http.Handler, n int, remoteAddr string, header ...string) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = perform(r, http.MethodGet, "/v1/items/1", remoteAddr, header...).Code
	}
	return out
}

// rateHeaders returns the rate-limit fields of w, "" for absent ones, in a fixed order:
// Retry-After, X-RateLimit-Limit, -Remaining, -Reset, RateLimit-Policy, RateLimit.
func rateHeaders(w *httptest.ResponseRecorder) [6]string {
	h := w.Header()
	return [6]string{h.Get("Retry-After"), h.Get("X-RateLimit-Limit"), h.Get("X-RateLimit-Remaining"),
		h.Get("X-RateLimit-Reset"), h.Get("RateLimit-Policy"), h.Get("RateLimit")}
}
