package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/local"
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

// Through a real chi router on loopback: each route has its limit and its own buckets,
// named by chi's pattern (every item shares the /items/{id} route's bucket).
func TestRoutes(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // a clock that never moves
	l := local.New(local.WithClock(func() time.Time { return start }))
	t.Cleanup(func() { _ = l.Close() })
	srv := httptest.NewServer(newRouter(l))
	t.Cleanup(srv.Close)

	var login []int
	for range 6 {
		login = append(login, send(t, srv, http.MethodPost, "/login").StatusCode)
	}
	assert.Equal(t, []int{200, 200, 200, 200, 200, 429}, login, "5 a minute")
	resp := send(t, srv, http.MethodGet, "/items/42")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "the login route's bucket is its own")
	assert.Equal(t, `"/items/{id}";q=300;w=60`, resp.Header.Get("RateLimit-Policy"))
	assert.Equal(t, "298", send(t, srv, http.MethodGet, "/items/7").Header.Get("X-RateLimit-Remaining"))
	for range 10 {
		assert.Equal(t, http.StatusOK, send(t, srv, http.MethodGet, "/healthz").StatusCode)
	}
}
