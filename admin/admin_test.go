package admin_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/admin"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/rules"
)

const file = `{"version": "3", "policies": {"login": {"limits": ["2/min"], "key": "user"}},
  "rules": [{"match": {"route": "POST /login"}, "policy": "login"}]}`

// Through real servers: two logins take the user's bucket; the admin endpoint shows it
// empty, resets it, and the user logs in again. Without the token, nothing is served.
func TestAdmin(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	t.Cleanup(func() { _ = limiter.Close() })
	live := rules.New(rules.Registry{"user": rules.HTTPKey(func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil })})
	require.NoError(t, live.Load("rules.json", []byte(file)))

	mux := http.NewServeMux()
	mux.Handle("POST /login", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	app := httptest.NewServer(httpmw.New(limiter, httpmw.WithRules(live))(mux))
	t.Cleanup(app.Close)
	ops := httptest.NewServer(admin.New(limiter, live, func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer s3cret" }))
	t.Cleanup(ops.Close)

	do := func(srv *httptest.Server, method, path string, hdr ...string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		require.NoError(t, err)
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, string(body)
	}
	login := func() int { code, _ := do(app, "POST", "/login", "X-User", "ann"); return code }
	auth := []string{"Authorization", "Bearer s3cret"}

	assert.Equal(t, []int{200, 200, 429}, []int{login(), login(), login()})
	code, body := do(ops, "GET", "/policies/login/keys/ann")
	assert.Equal(t, http.StatusForbidden, code, "no token, nothing served")
	assert.Equal(t, `{"error":"forbidden"}`, body)
	code, body = do(ops, "GET", "/policies", auth...)
	assert.Equal(t, http.StatusOK, code)
	assert.JSONEq(t, `{"version":"3","policies":[{"name":"login","limits":["2/min"],"key":"user"}]}`, body)
	_, body = do(ops, "GET", "/policies/login/keys/ann", auth...)
	// Empty: a login would wait 30 s, for the token back first.
	assert.JSONEq(t, `[{"limit":"2/min","allowed":false,"remaining":0,"retry_after_seconds":30}]`, body)
	_, body = do(ops, "POST", "/policies/login/keys/ann/refund?n=1", auth...)
	assert.JSONEq(t, `[{"limit":"2/min","allowed":true,"remaining":0,"retry_after_seconds":0}]`, body)
	_, body = do(ops, "POST", "/policies/login/keys/ann/reset", auth...)
	assert.JSONEq(t, `[{"limit":"2/min","allowed":true,"remaining":1,"retry_after_seconds":0,"full":true}]`, body)
	assert.Equal(t, 200, login())
	code, _ = do(ops, "GET", "/policies/nope/keys/ann", auth...)
	assert.Equal(t, http.StatusNotFound, code)
	code, _ = do(ops, "POST", "/policies/login/keys/ann/refund?n=0", auth...)
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Panics(t, func() { admin.New(limiter, live, nil) }, "no authorization: no handler")
	// The Inspector is found through any wrapper (ratelimit.As), and its absence at once.
	anyone := func(*http.Request) bool { return true }
	assert.NotPanics(t, func() { admin.New(fallback.New(observe.Wrap(limiter, nobody{}, "p"), nil), live, anyone) })
	assert.PanicsWithValue(t, "admin: New: admin_test.hidden cannot inspect buckets (ratelimit.Inspector)",
		func() { admin.New(hidden{limiter}, live, anyone) })
}

// hidden hides the capabilities of the limiter it holds.
type hidden struct{ ratelimit.Limiter }

// nobody is an Observer that listens to nothing.
type nobody struct{}

func (nobody) ObserveDecision(context.Context, observe.Decision) {}

// A policy of two limits: the endpoint reads each limit's own bucket (the second's key is
// "login#1|ann"), and after a reload that changes both, the usage spent under the old
// numbers.
func TestAdminTwoLimitsAcrossReload(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	t.Cleanup(func() { _ = limiter.Close() })
	live := rules.New(rules.Registry{"user": rules.HTTPKey(func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil })})
	policy := func(limits string) []byte {
		return []byte(`{"version": "1", "default": "login", "policies": {"login": {"limits": [` + limits + `], "key": "user"}}}`)
	}
	require.NoError(t, live.Load("rules.json", policy(`"2/min", "5/h"`)))
	app := httptest.NewServer(httpmw.New(limiter, httpmw.WithRules(live))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	t.Cleanup(app.Close)
	ops := httptest.NewServer(admin.New(limiter, live, func(*http.Request) bool { return true }))
	t.Cleanup(ops.Close)
	get := func(srv *httptest.Server, path string, hdr ...string) (int, string) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		if len(hdr) == 2 {
			req.Header.Set(hdr[0], hdr[1])
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, string(body)
	}
	login := func() int { code, _ := get(app, "/", "X-User", "ann"); return code }
	assert.Equal(t, []int{200, 200, 429}, []int{login(), login(), login()})
	_, body := get(ops, "/policies/login/keys/ann")
	assert.JSONEq(t, `[{"limit":"2/min","allowed":false,"remaining":0,"retry_after_seconds":30},
		{"limit":"5/h","allowed":true,"remaining":2,"retry_after_seconds":0}]`, body)

	require.NoError(t, live.Load("rules.json", policy(`"3/min", "4/h"`)))
	_, body = get(ops, "/policies/login/keys/ann")
	assert.JSONEq(t, `[{"limit":"3/min","allowed":true,"remaining":0,"retry_after_seconds":0},
		{"limit":"4/h","allowed":true,"remaining":1,"retry_after_seconds":0}]`, body)
	assert.Equal(t, []int{200, 429}, []int{login(), login()})
}

// A shadow policy is decided on its shadow buckets: the endpoint reads, resets and refunds
// those, not the enforced bucket of the same name that nothing spends. Two shadow logins
// over a 1/min limit drain it (both pass: shadow mode never refuses), the endpoint shows it
// empty, and a reset fills it so that the next shadow login is counted as allowed.
func TestAdminShadowPolicy(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	t.Cleanup(func() { _ = limiter.Close() })
	live := rules.New(rules.Registry{"user": rules.HTTPKey(func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil })})
	require.NoError(t, live.Load("rules.json", []byte(`{"version": "1", "default": "login",
	  "policies": {"login": {"limits": ["1/min"], "key": "user", "shadow": true}}}`)))
	app := httptest.NewServer(httpmw.New(limiter, httpmw.WithRules(live))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	t.Cleanup(app.Close)
	ops := httptest.NewServer(admin.New(limiter, live, func(*http.Request) bool { return true }))
	t.Cleanup(ops.Close)
	do := func(srv *httptest.Server, method, path string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-User", "ann")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var body json.RawMessage
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, string(body)
	}
	login := func() int { code, _ := do(app, "POST", "/"); return code }
	assert.Equal(t, []int{200, 200}, []int{login(), login()}, "shadow mode refuses nobody")
	_, body := do(ops, "GET", "/policies/login/keys/ann")
	assert.JSONEq(t, `[{"limit":"1/min","allowed":false,"remaining":0,"retry_after_seconds":60}]`, body)
	_, body = do(ops, "POST", "/policies/login/keys/ann/reset")
	assert.JSONEq(t, `[{"limit":"1/min","allowed":true,"remaining":0,"retry_after_seconds":0,"full":true}]`, body)
	// The enforced bucket of the same policy and key was never touched.
	res, err := limiter.Peek(t.Context(), "login|ann", ratelimit.PerMinute(1), 1)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
	assert.Zero(t, res.RetryAfter)
}

// A middleware in shadow mode (its WithShadow) decides every policy on shadow buckets; the
// endpoint built WithShadow reads those.
func TestAdminWithShadow(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	t.Cleanup(func() { _ = limiter.Close() })
	live := rules.New(rules.Registry{"user": rules.HTTPKey(func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil })})
	require.NoError(t, live.Load("rules.json", []byte(`{"version": "1", "default": "login",
	  "policies": {"login": {"limits": ["2/min"], "key": "user"}}}`)))
	app := httptest.NewServer(httpmw.New(limiter, httpmw.WithRules(live), httpmw.WithShadow())(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	t.Cleanup(app.Close)
	for _, tc := range []struct {
		opts []admin.Option
		want string
	}{
		{nil, `[{"limit":"2/min","allowed":true,"remaining":1,"retry_after_seconds":0,"full":true}]`},
		{[]admin.Option{admin.WithShadow()}, `[{"limit":"2/min","allowed":true,"remaining":0,"retry_after_seconds":0}]`},
	} {
		ops := httptest.NewServer(admin.New(limiter, live, func(*http.Request) bool { return true }, tc.opts...))
		if len(tc.opts) == 0 {
			req, err := http.NewRequest(http.MethodPost, app.URL+"/", nil)
			require.NoError(t, err)
			req.Header.Set("X-User", "ann")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
		}
		resp, err := http.Get(ops.URL + "/policies/login/keys/ann")
		require.NoError(t, err)
		var body json.RawMessage
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
		resp.Body.Close()
		ops.Close()
		assert.JSONEq(t, tc.want, string(body), "admin options %d", len(tc.opts))
	}
}
