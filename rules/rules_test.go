package rules_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/rules"
)

// planKey is the context key of the plan an authentication middleware put there.
type planKey struct{}

// registry: the client's address, and the plan the server verified (in the context).
var registry = rules.Registry{
	"client-ip": rules.HTTPKey(func(r *http.Request) (string, error) { return "ip:" + r.RemoteAddr, nil }),
	"plan": func(r rules.Request) (string, error) {
		plan, _ := r.Context().Value(planKey{}).(string)
		return plan, nil
	},
	"user": rules.HTTPKey(func(r *http.Request) (string, error) { return "user:" + r.Header.Get("X-User"), nil }),
}

const file = `{
  "version": "7",
  "default": "free",
  "policies": {
    "login": {"limits": ["2/min", "10/h"], "key": "client-ip"},
    "free":  {"limits": ["3/min"], "key": "user"},
    "pro":   {"limits": ["100/min"], "key": "user", "cost": 2}
  },
  "rules": [
    {"match": {"route": "POST /login"}, "policy": "login"},
    {"match": {"key": {"plan": "pro"}}, "policy": "pro"}
  ]
}`

// view is a Request for the tests of Set.Limits.
type view struct {
	ctx           context.Context
	route, method string
}

func (v view) Context() context.Context { return v.ctx }
func (v view) Route() string            { return v.route }
func (v view) Method() string           { return v.method }
func (v view) FullMethod() string       { return "" }
func (v view) Header(string) string     { return "" }

// The first rule that matches decides; the default policy takes the rest.
func TestLimits(t *testing.T) {
	live := rules.New(registry)
	require.NoError(t, live.Load("rules.json", []byte(file)))
	s := live.Set()
	assert.Equal(t, "7", s.Version)
	assert.Equal(t, []string{"free", "login", "pro"}, s.Policies())
	pro := context.WithValue(context.Background(), planKey{}, "pro")

	req := httptest.NewRequest(http.MethodPost, "/login", nil)
	req.Pattern = "POST /login"
	got := live.HTTP(nil)(req)
	// Every limit of a policy keeps its usage across a reload.
	assert.Equal(t, []ratelimit.Request{
		{Key: "ip:192.0.2.1:1234", Limit: kept(ratelimit.PerMinute(2)), Name: "login"},
		{Key: "ip:192.0.2.1:1234", Limit: kept(ratelimit.PerHour(10)), Name: "login"},
	}, got)
	req = httptest.NewRequestWithContext(pro, http.MethodGet, "/items", nil)
	req.Header.Set("X-User", "42")
	assert.Equal(t, []ratelimit.Request{{Key: "user:42", Limit: kept(ratelimit.PerMinute(100)), N: 2, Name: "pro"}},
		live.HTTP(nil)(req))
	// No rule matches: the default policy. Its key function reads an HTTP request, which
	// this one is not: no key, which the middleware limits under its UnkeyedKey.
	assert.Equal(t, []ratelimit.Request{{Key: "", Limit: kept(ratelimit.PerMinute(3)), Name: "free"}},
		s.Limits(view{ctx: context.Background(), route: "GET /items"}))
}

// A policy's name has no '#', which separates it from the index of its limit in its bucket
// keys: "a#1" could otherwise share a bucket with the second limit of "a".
func TestNameWithHash(t *testing.T) {
	live := rules.New(registry)
	err := live.Load("rules.json", []byte(`{"default": "a#1", "policies": {"a#1": {"limits": ["1/s"], "key": "user"}}}`))
	require.ErrorIs(t, err, rules.ErrInvalid)
	assert.ErrorContains(t, err, `policy "a#1": a name with '|' or '#'`)
}

// kept is l with KeepUsage, as the rules set it.
func kept(l ratelimit.Limit) ratelimit.Limit {
	l.KeepUsage = true
	return l
}

// Every mistake of a file is found at load, named by file, line and rule or policy, all of
// them at once; and the set in force stays.
func TestInvalidFiles(t *testing.T) {
	log := local.New(local.WithAlgorithm(ratelimit.SlidingWindowLog))
	t.Cleanup(func() { _ = log.Close() })
	live := rules.New(registry, rules.WithValidator(log))
	require.NoError(t, live.Load("rules.json", []byte(file)))
	cases := map[string]string{
		"unknown top field": `{"polices": {}}`,
		"unknown policy field": `{"policies": {
  "a": {"limits": ["1/s"], "key": "user", "burst": 3}}}`,
		"everything else": `{
  "policies": {
    "a": {"limits": ["1/s", "10/week"], "key": "nobody"},
    "b": {"limits": ["20000/h"], "key": "user"}
  },
  "rules": [
    {"match": {"route": "/x"}, "policy": "c"},
    {"match": {}, "policy": "a"},
    {"match": {"key": {"tier": "gold"}}, "policy": "a"}
  ]}`,
	}
	want := map[string]string{
		"unknown top field":    "rules: invalid rules: rules.json:1: unknown field polices (version, default, policies, rules)",
		"unknown policy field": `rules: invalid rules: rules.json:2: policy "a": json: unknown field "burst"`,
		"everything else": `rules: invalid rules: rules.json:3: policy "a": ratelimit: invalid limit: "10/week": unknown unit "week" (s, min, h or day)
rules: invalid rules: rules.json:3: policy "a": key function "nobody" is not registered
rules: invalid rules: rules.json:4: policy "b": ratelimit: invalid limit: burst 20000 is above the sliding window log's maximum of 10000 (ratelimit.MaxLogBurst)
rules: invalid rules: rules.json:7: rule 1: policy "c" is not defined
rules: invalid rules: rules.json:8: rule 2: matches every request: give the default policy ("default") instead
rules: invalid rules: rules.json:9: rule 3: key function "tier" is not registered`,
	}
	for name, text := range cases {
		err := live.Load("rules.json", []byte(text))
		require.ErrorIs(t, err, rules.ErrInvalid, name)
		assert.EqualError(t, err, want[name], name)
		assert.Equal(t, "7", live.Set().Version, "the set in force stays")
	}
}

// Through a real net/http server: the login policy's two limits, all or nothing, keyed by
// the client's address, beside the plans keyed by user; the middleware wraps the mux.
func TestThroughHTTPMiddleware(t *testing.T) {
	limiter := local.New(local.WithClock(func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }))
	t.Cleanup(func() { _ = limiter.Close() })
	live := rules.New(registry, rules.WithValidator(limiter))
	require.NoError(t, live.Load("rules.json", []byte(file)))
	mux := http.NewServeMux()
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	mux.Handle("POST /login", ok)
	mux.Handle("GET /items", ok)
	srv := httptest.NewServer(httpmw.New(limiter, httpmw.WithLimits(live.HTTP(mux)))(mux))
	t.Cleanup(srv.Close)
	status := func(method, path string) int {
		req, err := http.NewRequest(method, srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-User", "42")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, []int{200, 200, 429}, []int{status("POST", "/login"), status("POST", "/login"), status("POST", "/login")})
	assert.Equal(t, []int{200, 200, 200, 429}, []int{status("GET", "/items"), status("GET", "/items"),
		status("GET", "/items"), status("GET", "/items")}, "the free plan: 3 a minute, a bucket of its own")
}

// Watch puts a changed file in force, and keeps the set in force when the new content
// fails, telling the error handler once.
func TestWatch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.json")
	require.NoError(t, os.WriteFile(path, []byte(file), 0o600))
	synctest.Test(t, func(t *testing.T) {
		var errs []error
		live := rules.New(registry, rules.WithErrorHandler(func(err error) { errs = append(errs, err) }))
		require.NoError(t, live.LoadFile(path))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { live.Watch(ctx, path, time.Second); close(done) }()

		next := []byte(`{"version": "8", "default": "a", "policies": {"a": {"limits": ["1/s"], "key": "user"}}}`)
		require.NoError(t, os.WriteFile(path, next, 0o600))
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, "8", live.Set().Version)

		require.NoError(t, os.WriteFile(path, []byte(`{"version": "9", "default": "nope"}`), 0o600))
		for range 3 {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		assert.Equal(t, "8", live.Set().Version, "a bad file changes nothing")
		require.Len(t, errs, 1)
		assert.True(t, errors.Is(errs[0], rules.ErrInvalid))
		cancel()
		<-done
	})
}
