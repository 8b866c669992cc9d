package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/prommetrics"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	gin.DefaultWriter = io.Discard // gin.Logger's lines
	m.Run()
}

// send performs a request from remoteAddr and returns the status code.
func send(r http.Handler, method, path, remoteAddr string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	req.RemoteAddr = remoteAddr
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	r.ServeHTTP(w, req)
	return w
}

func TestRoutes(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := local.New(local.WithClock(func() time.Time { return now }), local.WithCleanupInterval(-1))
	defer l.Close()
	registry := prometheus.NewRegistry()
	metrics := prommetrics.New()
	registry.MustRegister(metrics)
	r := newRouter(l, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}, metrics, registry)

	var login []int
	for range 6 {
		login = append(login, send(r, http.MethodPost, "/login", "203.0.113.9:1").Code)
	}
	assert.Equal(t, []int{200, 200, 200, 200, 200, 429}, login, "5 a minute")
	// PerMinute(5) gives back a token every 12 s.
	w := send(r, http.MethodPost, "/login", "203.0.113.9:1")
	assert.Equal(t, "12", w.Header().Get("Retry-After"))
	assert.Equal(t, `"login";r=0;t=12`, w.Header().Get("RateLimit"))

	// The API has its own, larger bucket; behind the trusted proxy each client has one.
	w = send(r, http.MethodGet, "/api/items/42", "203.0.113.9:1")
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, "299", w.Header().Get("X-RateLimit-Remaining"))
	assert.Equal(t, `"api";q=300;w=60`, w.Header().Get("RateLimit-Policy"))
	w = send(r, http.MethodPost, "/login", "10.0.0.2:1", "X-Forwarded-For", "198.51.100.1")
	assert.Equal(t, http.StatusOK, w.Code, "another client behind the proxy")

	for range 10 {
		require.Equal(t, http.StatusOK, send(r, http.MethodGet, "/healthz", "203.0.113.9:1").Code)
	}
}

func TestRedisBackend(t *testing.T) {
	server := redistest.NewServer(t)
	l, closeLimiter, err := newLimiter(server.Addr())
	require.NoError(t, err)
	defer closeLimiter()
	r := newRouter(l, nil, prommetrics.New(), prometheus.NewRegistry())
	var login []int
	for range 6 {
		login = append(login, send(r, http.MethodPost, "/login", "203.0.113.9:1").Code)
	}
	assert.Equal(t, []int{200, 200, 200, 200, 200, 429}, login)
	keys, err := server.Do("KEYS", "gin-example:*")
	require.NoError(t, err)
	assert.Len(t, keys, 1, "one bucket, under the example's prefix")
}

func TestParsePrefixes(t *testing.T) {
	got, err := parsePrefixes(" 10.0.0.0/8, fd00::/8 ,")
	require.NoError(t, err)
	assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}, got)
	_, err = parsePrefixes("10.0.0.1")
	assert.ErrorContains(t, err, `"10.0.0.1"`)
}

// /metrics, scraped over HTTP from a real server after a few requests, holds the series of
// the decisions: 5 logins allowed and 1 denied, 1 API request allowed.
func TestMetrics(t *testing.T) {
	l := local.New(local.WithClock(ratelimittest.NewClock().Now))
	t.Cleanup(func() { _ = l.Close() })
	registry := prometheus.NewRegistry()
	metrics := prommetrics.New()
	registry.MustRegister(metrics)
	srv := httptest.NewServer(newRouter(l, nil, metrics, registry))
	t.Cleanup(srv.Close)
	for range 6 {
		resp, err := http.Post(srv.URL+"/login", "", nil)
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	resp, err := http.Get(srv.URL + "/api/items/42")
	require.NoError(t, err)
	_ = resp.Body.Close()

	resp, err = http.Get(srv.URL + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	text := string(body)
	for _, series := range []string{
		`ratelimit_requests_total{ratelimit_policy="login",ratelimit_priority="critical",ratelimit_result="allowed",ratelimit_shadow="false"} 5`,
		`ratelimit_requests_total{ratelimit_policy="login",ratelimit_priority="critical",ratelimit_result="denied",ratelimit_shadow="false"} 1`,
		`ratelimit_requests_total{ratelimit_policy="api",ratelimit_priority="critical",ratelimit_result="allowed",ratelimit_shadow="false"} 1`,
		`ratelimit_decision_duration_seconds_count{ratelimit_backend="local",ratelimit_policy="login",ratelimit_result="allowed"} 5`,
	} {
		assert.Contains(t, text, series)
	}
}
