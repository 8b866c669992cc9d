package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/rules"
)

// service is the example's router on loopback, over a limiter whose clock never moves (no
// token refills during a test), with its rules loaded from a copy of a file the test may
// rewrite.
type service struct {
	t    *testing.T
	srv  *httptest.Server
	live *rules.Rules
	path string
}

func newService(t *testing.T, file []byte) *service {
	gin.SetMode(gin.TestMode)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return start }))
	t.Cleanup(func() { _ = limiter.Close() })
	s := &service{t: t, path: filepath.Join(t.TempDir(), "rules.yaml")}
	s.write(file)
	s.live = newRules(limiter, func(err error) { t.Error(err) })
	require.NoError(t, s.live.LoadFile(s.path))
	s.srv = httptest.NewServer(newRouter(limiter, s.live))
	t.Cleanup(s.srv.Close)
	return s
}

// write rewrites the service's rules file.
func (s *service) write(file []byte) {
	require.NoError(s.t, os.WriteFile(s.path, file, 0o600))
}

// do sends a request as the caller token stands for ("" for nobody) and returns its status
// and X-RateLimit-Limit and X-RateLimit-Remaining headers.
func (s *service) do(method, path, token string, form url.Values) (status int, limit, remaining string) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(s.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-RateLimit-Limit"), resp.Header.Get("X-RateLimit-Remaining")
}

// status is do's status alone.
func (s *service) status(method, path, token string, form url.Values) int {
	s.t.Helper()
	code, _, _ := s.do(method, path, token, form)
	return code
}

// The shipped rules.yaml: each policy, through a real Gin server.
func TestPolicies(t *testing.T) {
	file, err := os.ReadFile("rules.yaml")
	require.NoError(t, err)
	s := newService(t, file)
	good, bad := url.Values{"password": {"demo"}}, url.Values{"password": {"guess"}}

	// Logins: 5 a minute and 20 an hour per address, failed ones only (a successful login
	// is refunded).
	var got []int
	for range 3 {
		got = append(got, s.status("POST", "/login", "", good))
	}
	for range 6 {
		got = append(got, s.status("POST", "/login", "", bad))
	}
	assert.Equal(t, []int{200, 200, 200, 401, 401, 401, 401, 401, 429}, got)

	// Plans per signed-in user: ann is free (100 a minute), bob pro, whose binding limit
	// is 20 a second, in a burst of 40; a caller not signed in, 20 a minute per address.
	for _, c := range []struct{ token, limit, remaining string }{
		{"ann-token", "100", "99"}, {"ann-token", "100", "98"},
		{"bob-token", "40", "39"},
		{"", "20", "19"},
	} {
		code, limit, remaining := s.do("GET", "/items", c.token, nil)
		assert.Equal(t, []any{200, c.limit, c.remaining}, []any{code, limit, remaining}, c.token)
	}
	// /search: one bucket for everyone, 50 a second.
	_, limit, first := s.do("GET", "/search", "ann-token", nil)
	_, _, second := s.do("GET", "/search", "bob-token", nil)
	assert.Equal(t, []string{"50", "49", "48"}, []string{limit, first, second})
}

// freePlan is a rules file whose free plan is n a minute.
func freePlan(n string) []byte {
	return []byte(`version: "` + n + `"
policies:
  free: {limits: [` + n + `/min], key: user}
rules:
  - match: {key: {plan: free}}
    policy: free
`)
}

// A rewritten file, once loaded (what Watch does when the file changes), puts its limit in
// force for the requests that follow; a file with a mistake changes nothing.
func TestReload(t *testing.T) {
	s := newService(t, freePlan("3"))
	var got []int
	for range 4 {
		got = append(got, s.status("GET", "/items", "ann-token", nil))
	}
	assert.Equal(t, []int{200, 200, 200, 429}, got, "3 a minute")

	s.write(freePlan("5"))
	require.NoError(t, s.live.LoadFile(s.path))
	code, limit, remaining := s.do("GET", "/items", "ann-token", nil)
	assert.Equal(t, []any{200, "5"}, []any{code, limit}, "5 a minute: the request the old limit denied passes")
	usageKeptAcrossReload(t, s, remaining)

	s.write([]byte("policies:\n  free: {limits: [5/min], key: nobody}\n"))
	err := s.live.LoadFile(s.path)
	require.ErrorIs(t, err, rules.ErrInvalid)
	assert.Equal(t, `rules: invalid rules: `+s.path+`:2: policy "free": key function "nobody" is not registered`, err.Error())
	assert.Equal(t, "5", s.live.Set().Version, "the set in force stays")
}

// usageKeptAcrossReload asserts that the reload of TestReload (3 a minute, all spent, then
// 5 a minute and one more request) kept ann's usage: the 3 tokens spent stay spent, so 5 a
// minute leaves her 1 after that request, then none (rules sets Limit.KeepUsage on every
// policy limit: without it, the new numbers would start a fresh bucket and leave her 4).
func usageKeptAcrossReload(t *testing.T, s *service, remainingAfterFirst string) {
	t.Helper()
	assert.Equal(t, "1", remainingAfterFirst, "3 spent of 5, and this one")
	code, _, remaining := s.do("GET", "/items", "ann-token", nil)
	assert.Equal(t, []any{200, "0"}, []any{code, remaining})
	assert.Equal(t, 429, s.status("GET", "/items", "ann-token", nil))
}
