package httpmw_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/httpmw"
)

// WithConcurrency alone (no rate limit, a nil rate limiter): one export per client at a
// time. While the first runs, a second finds no permit and no queue: 503 with
// Retry-After 1; once the first is done, the next one runs.
func TestConcurrencyAlone(t *testing.T) {
	conc := concurrency.NewLocal(concurrency.WithQueue(-1, concurrency.OldestFirst))
	t.Cleanup(func() { _ = conc.Close() })
	entered, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slow") == "1" {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})
	srv := httptest.NewServer(httpmw.New(nil, httpmw.WithConcurrency(conc, 1))(slow))
	t.Cleanup(srv.Close)

	first := make(chan int)
	go func() { first <- send(t, http.MethodGet, srv.URL+"/export?slow=1", "") }()
	<-entered
	resp, err := http.Get(srv.URL + "/export")
	require.NoError(t, err)
	var body map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	assert.Equal(t, map[string]string{"error": "too many requests in flight"}, body)
	close(release)
	assert.Equal(t, 200, <-first)
	assert.Equal(t, 200, send(t, http.MethodGet, srv.URL+"/export", ""))
}

// Rate first, then concurrency: a request the rate limit denies takes no permit.
func TestConcurrencyAfterRate(t *testing.T) {
	conc := concurrency.NewLocal(concurrency.WithQueue(-1, concurrency.OldestFirst))
	t.Cleanup(func() { _ = conc.Close() })
	srv := httptest.NewServer(httpmw.New(newLimiter(t), httpmw.WithLimit(ratelimit.PerMinute(1)),
		httpmw.WithConcurrency(conc, 1))(ok))
	t.Cleanup(srv.Close)
	assert.Equal(t, []int{200, 429, 429}, []int{
		send(t, http.MethodGet, srv.URL, ""), send(t, http.MethodGet, srv.URL, ""), send(t, http.MethodGet, srv.URL, "")})
	p, held, err := conc.TryAcquire(t.Context(), "default|ip:127.0.0.1", 1) // the default policy's bucket key
	require.NoError(t, err)
	assert.True(t, held, "no permit is held after the requests")
	p.Release()
}

// Configuration mistakes refuse to start.
func TestConcurrencyRefused(t *testing.T) {
	conc := concurrency.NewLocal()
	t.Cleanup(func() { _ = conc.Close() })
	assert.PanicsWithValue(t, "httpmw: New: WithConcurrency: max 0 is less than 1",
		func() { httpmw.New(nil, httpmw.WithConcurrency(conc, 0)) })
	assert.PanicsWithValue(t, "httpmw: New: WithConcurrency: nil concurrency.Limiter",
		func() { httpmw.New(nil, httpmw.WithConcurrency((*concurrency.Local)(nil), 1)) })
	assert.PanicsWithValue(t, "httpmw: New: nil Limiter",
		func() { httpmw.New(nil, httpmw.WithLimit(ratelimit.PerMinute(1)), httpmw.WithConcurrency(conc, 1)) })
}
