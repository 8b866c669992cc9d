package httpmw_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// newLimiter returns a local limiter on a clock that never moves.
func newLimiter(t *testing.T) *local.Limiter {
	l := local.New(local.WithClock(ratelimittest.NewClock().Now))
	t.Cleanup(func() { _ = l.Close() })
	return l
}

var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })

// send sends method url with the given X-Forwarded-For (none when empty) and returns the
// status code.
func send(t *testing.T, method, url, xff string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	if xff != "" {
		req.Header.Set("X-Forwarded-For", xff)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// Each ServeMux pattern gets its limit from WithRouteLimits, through a real server: 2 a
// minute on POST /login, the default of 3 a minute on GET /items/{id} (all items share the
// route's bucket), and /health unlimited.
func TestRouteLimitsOnServeMux(t *testing.T) {
	mw := httpmw.New(newLimiter(t), httpmw.WithRouteLimits(map[string]ratelimit.Limit{
		"POST /login": ratelimit.PerMinute(2),
	}, ratelimit.PerMinute(3)), httpmw.WithSkipFunc(func(r *http.Request) bool { return r.Pattern == "GET /health" }))
	mux := http.NewServeMux()
	for _, pattern := range []string{"POST /login", "GET /items/{id}", "GET /health"} {
		mux.Handle(pattern, mw(ok))
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	var login, items, health []int
	for i := range 4 {
		login = append(login, send(t, http.MethodPost, srv.URL+"/login", ""))
		items = append(items, send(t, http.MethodGet, fmt.Sprintf("%s/items/%d", srv.URL, i), ""))
		health = append(health, send(t, http.MethodGet, srv.URL+"/health", ""))
	}
	assert.Equal(t, []int{200, 200, 429, 429}, login)
	assert.Equal(t, []int{200, 200, 200, 429}, items)
	assert.Equal(t, []int{200, 200, 200, 200}, health)
}

// The default key is the socket peer: a client cannot buy requests by sending
// X-Forwarded-For, which is read only from proxies named with httpkeys.WithTrustedProxies.
func TestDefaultKeyIgnoresForwardedFor(t *testing.T) {
	srv := httptest.NewServer(httpmw.New(newLimiter(t), httpmw.WithLimit(ratelimit.PerMinute(1)))(ok))
	t.Cleanup(srv.Close)
	assert.Equal(t, 200, send(t, http.MethodGet, srv.URL, "192.0.2.1"))
	assert.Equal(t, 429, send(t, http.MethodGet, srv.URL, "192.0.2.2"))
}

// A nil Option is skipped; nil functions mean the defaults.
func TestNilOptions(t *testing.T) {
	mw := httpmw.New(newLimiter(t), nil, httpmw.WithLimit(ratelimit.PerMinute(1)), httpmw.WithKeyFunc(nil),
		httpmw.WithCostFunc(nil), httpmw.WithSkipFunc(nil), httpmw.WithDeniedHandler(nil),
		httpmw.WithErrorHandler(nil), httpmw.WithLimitFunc(nil))
	srv := httptest.NewServer(mw(ok))
	t.Cleanup(srv.Close)
	assert.Equal(t, 200, send(t, http.MethodGet, srv.URL, ""))
	assert.Equal(t, 429, send(t, http.MethodGet, srv.URL, ""))
}

// Configurations that cannot work panic at construction, naming what is wrong.
func TestNewPanics(t *testing.T) {
	l := newLimiter(t)
	assert.PanicsWithValue(t, "httpmw: New: nil Limiter", func() { httpmw.New(nil, httpmw.WithLimit(ratelimit.PerMinute(1))) })
	assert.PanicsWithValue(t, "httpmw: New: no limit configured: pass WithLimit, WithRouteLimits, WithLimitFunc, WithLimits or WithRules",
		func() { httpmw.New(l) })
	assert.PanicsWithValue(t, "httpmw: New: WithLimit(1/s burst 0): ratelimit: invalid limit: burst 0 is less than 1",
		func() { httpmw.New(l, httpmw.WithLimit(ratelimit.Limit{Rate: 1})) })
	assert.PanicsWithValue(t, "httpmw: New: WithRouteLimits: GET /x: 1/s burst 0: ratelimit: invalid limit: burst 0 is less than 1",
		func() {
			httpmw.New(l, httpmw.WithRouteLimits(map[string]ratelimit.Limit{"GET /x": {Rate: 1}}, ratelimit.Limit{}))
		})
}
