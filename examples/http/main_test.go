package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// send sends method path to srv and returns the response, its body read.
func send(t *testing.T, srv *httptest.Server, method, path string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp
}

// The routes through a real server on loopback, on a clock that never moves.
func TestRoutes(t *testing.T) {
	l := local.New(local.WithClock(ratelimittest.NewClock().Now))
	t.Cleanup(func() { _ = l.Close() })
	srv := httptest.NewServer(newMux(l))
	t.Cleanup(srv.Close)

	var login []int
	for range 6 {
		login = append(login, send(t, srv, http.MethodPost, "/login").StatusCode)
	}
	assert.Equal(t, []int{200, 200, 200, 200, 200, 429}, login, "5 a minute")
	// PerMinute(5) gives back a token every 12 s.
	resp := send(t, srv, http.MethodPost, "/login")
	assert.Equal(t, "12", resp.Header.Get("Retry-After"))
	assert.Equal(t, `"POST /login";r=0;t=12`, resp.Header.Get("RateLimit"))

	// The API route has its own, larger bucket; every item shares it.
	resp = send(t, srv, http.MethodGet, "/api/items/42")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "299", resp.Header.Get("X-RateLimit-Remaining"))
	assert.Equal(t, `"GET /api/items/{id}";q=300;w=60`, resp.Header.Get("RateLimit-Policy"))
	assert.Equal(t, "298", send(t, srv, http.MethodGet, "/api/items/7").Header.Get("X-RateLimit-Remaining"))

	for range 10 {
		resp := send(t, srv, http.MethodGet, "/healthz")
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Empty(t, resp.Header.Get("X-RateLimit-Limit"), "not limited")
	}
}

func TestRedisBackend(t *testing.T) {
	server := redistest.NewServer(t)
	l, closeLimiter, err := newLimiter(server.Addr())
	require.NoError(t, err)
	defer closeLimiter()
	srv := httptest.NewServer(newMux(l))
	t.Cleanup(srv.Close)
	var login []int
	for range 6 {
		login = append(login, send(t, srv, http.MethodPost, "/login").StatusCode)
	}
	assert.Equal(t, []int{200, 200, 200, 200, 200, 429}, login)
	keys, err := server.Do("KEYS", "http-example:*")
	require.NoError(t, err)
	assert.Len(t, keys, 1, "one bucket, under the example's prefix")
}
