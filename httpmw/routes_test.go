package httpmw_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/httpmw"
)

// Policies own their buckets: two routes with the same limit, for the same client, keep
// a bucket each (one /signup does not use up /reset-password).
func TestRoutesKeepTheirBuckets(t *testing.T) {
	mw := httpmw.New(newLimiter(t), httpmw.WithRouteLimits(map[string]ratelimit.Limit{
		"POST /signup":         ratelimit.PerMinute(1),
		"POST /reset-password": ratelimit.PerMinute(1),
	}, ratelimit.Limit{}))
	mux := http.NewServeMux()
	mux.Handle("POST /signup", mw(ok))
	mux.Handle("POST /reset-password", mw(ok))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	assert.Equal(t, 200, send(t, http.MethodPost, srv.URL+"/signup", ""))
	assert.Equal(t, 200, send(t, http.MethodPost, srv.URL+"/reset-password", ""))
	assert.Equal(t, 429, send(t, http.MethodPost, srv.URL+"/signup", ""))
	assert.Equal(t, 429, send(t, http.MethodPost, srv.URL+"/reset-password", ""))
}

// The middleware wrapping the whole *http.ServeMux, the natural way, finds each request's
// pattern itself: the route limits apply, nothing is reported.
func TestRouteLimitsAroundTheMux(t *testing.T) {
	var reported []error
	mux := http.NewServeMux()
	for _, pattern := range []string{"POST /login", "GET /items/{id}"} {
		mux.Handle(pattern, ok)
	}
	limit := httpmw.New(newLimiter(t), httpmw.WithRouteLimits(map[string]ratelimit.Limit{
		"POST /login": ratelimit.PerMinute(2),
	}, ratelimit.PerMinute(3)), httpmw.WithErrorHandler(func(_ http.ResponseWriter, _ *http.Request, err error) bool {
		reported = append(reported, err)
		return false
	}))
	srv := httptest.NewServer(limit(mux))
	t.Cleanup(srv.Close)
	var login, items []int
	for range 4 {
		login = append(login, send(t, http.MethodPost, srv.URL+"/login", ""))
		items = append(items, send(t, http.MethodGet, srv.URL+"/items/7", ""))
	}
	assert.Equal(t, []int{200, 200, 429, 429}, login)
	assert.Equal(t, []int{200, 200, 200, 429}, items)
	assert.Empty(t, reported)
}

// Route limits around a handler that is not a ServeMux, with no WithRouteFunc, cannot see
// patterns: requests get the default, and the first one is reported, once.
func TestRouteLimitsWithoutPatterns(t *testing.T) {
	var reported []error
	limit := httpmw.New(newLimiter(t), httpmw.WithRouteLimits(map[string]ratelimit.Limit{
		"POST /login": ratelimit.PerMinute(1),
	}, ratelimit.PerMinute(3)), httpmw.WithErrorHandler(func(_ http.ResponseWriter, _ *http.Request, err error) bool {
		reported = append(reported, err)
		return false
	}))
	srv := httptest.NewServer(limit(ok)) // a plain handler: no pattern anywhere
	t.Cleanup(srv.Close)
	var login []int
	for range 4 {
		login = append(login, send(t, http.MethodPost, srv.URL+"/login", ""))
	}
	assert.Equal(t, []int{200, 200, 200, 429}, login, "the default, 3 a minute")
	if assert.Len(t, reported, 1) {
		assert.Contains(t, reported[0].Error(), "WithRouteLimits: a request has no route pattern")
	}
}

// WithRouteFunc finds patterns for other routers.
func TestRouteFunc(t *testing.T) {
	limit := httpmw.New(newLimiter(t), httpmw.WithRouteLimits(map[string]ratelimit.Limit{
		"/login": ratelimit.PerMinute(1),
	}, ratelimit.PerMinute(3)), httpmw.WithRouteFunc(func(r *http.Request) string { return r.URL.Path }))
	srv := httptest.NewServer(limit(ok))
	t.Cleanup(srv.Close)
	assert.Equal(t, 200, send(t, http.MethodPost, srv.URL+"/login", ""))
	assert.Equal(t, 429, send(t, http.MethodPost, srv.URL+"/login", ""))
}

// A policy name with a '|', which separates a bucket key's policy from its key, is refused.
func TestPolicyNameWithBar(t *testing.T) {
	assert.PanicsWithValue(t, `httpmw: New: WithPolicyName: policy name "a|b" has a '|', which separates a bucket key's policy from its key`,
		func() {
			httpmw.New(newLimiter(t), httpmw.WithLimit(ratelimit.PerMinute(1)), httpmw.WithPolicyName("a|b"))
		})
	assert.Panics(t, func() {
		httpmw.New(newLimiter(t), httpmw.WithRouteLimits(map[string]ratelimit.Limit{"GET /a|b": ratelimit.PerMinute(1)}, ratelimit.Limit{}))
	})
}
