package rules_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	clocal "github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
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

// The first rule that matches decides; the default policy takes the rest.
func TestLimits(t *testing.T) {
	live := rules.New(registry)
	require.NoError(t, live.Load("rules.json", []byte(file)))
	s := live.Set()
	assert.Equal(t, "7", s.Version)
	assert.Equal(t, []string{"free", "login", "pro"}, s.Policies())
	pro := context.WithValue(context.Background(), planKey{}, "pro")

	req := httptest.NewRequest(http.MethodPost, "/login", nil)
	got := s.AppendLimits(nil, rules.FromHTTP(req, "POST /login"))
	// Every limit of a policy keeps its usage across a reload.
	assert.Equal(t, []ratelimit.Request{
		{Key: "ip:192.0.2.1:1234", Limit: kept(ratelimit.PerMinute(2)), Name: "login"},
		{Key: "ip:192.0.2.1:1234", Limit: kept(ratelimit.PerHour(10)), Name: "login"},
	}, got)
	req = httptest.NewRequestWithContext(pro, http.MethodGet, "/items", nil)
	req.Header.Set("X-User", "42")
	assert.Equal(t, []ratelimit.Request{{Key: "user:42", Limit: kept(ratelimit.PerMinute(100)), N: 2, Name: "pro"}},
		s.AppendLimits(nil, rules.FromHTTP(req, "GET /items")))
	// No rule matches: the default policy. Its key function reads an HTTP request, which
	// this one is not: no key, which the middleware limits under its UnkeyedKey.
	assert.Equal(t, []ratelimit.Request{{Key: "", Limit: kept(ratelimit.PerMinute(3)), Name: "free"}},
		s.AppendLimits(nil, rules.FromGRPC(context.Background(), "/pkg.S/M", nil)))
}

// Matching a request and listing its limits allocate nothing, given room in dst (the key
// function here allocates nothing either).
func TestAppendLimitsAllocatesNothing(t *testing.T) {
	live := rules.New(rules.Registry{
		"client-ip": rules.HTTPKey(func(r *http.Request) (string, error) { return r.RemoteAddr, nil }),
		"user":      rules.HTTPKey(func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil }),
		"plan":      func(rules.Request) (string, error) { return "free", nil },
	})
	require.NoError(t, live.Load("rules.json", []byte(file)))
	s := live.Set()
	req := httptest.NewRequest(http.MethodGet, "/items", nil)
	in := rules.FromHTTP(req, "GET /items") // the last rule is tried, and fails: the default
	buf := make([]ratelimit.Request, 0, 2)
	assert.Zero(t, testing.AllocsPerRun(100, func() { buf = s.AppendLimits(buf[:0], in) }))
	assert.Equal(t, []ratelimit.Request{{Key: "", Limit: kept(ratelimit.PerMinute(3)), Name: "free"}}, buf)
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
		"trailing word":       `{"policies": {}} trailing`,
		"second object":       "{\"policies\": {}}\n{\"x\": 1}",
		"two limits":          "{\"policies\": {\"a\": {\"limits\": [\"1/s\"], \"key\": \"user\",\n\n  \"limits\": [\"100/s\"]}}}",
		"two policies fields": "{\"policies\": {},\n\n\"policies\": {}}",
		"two routes":          "{\"policies\": {}, \"rules\": [\n{\"match\": {\"route\": \"/a\",\n \"route\": \"/b\"}, \"policy\": \"a\"}]}",
		"two header values":   "{\"policies\": {}, \"rules\": [{\"match\": {\"header\": {\"X-A\": \"1\",\n\"X-A\": \"2\"}}, \"policy\": \"a\"}]}",
		"no policies":         `{"version": "7", "default": "free"}`,
		"routes that cannot match": `{"policies": {"a": {"limits": ["1/s"]}}, "rules": [
  {"match": {"route": "POST"}, "policy": "a"},
  {"match": {"route": "POST /login", "method": "GET"}, "policy": "a"},
  {"match": {"route": "POST /login", "method": "POST"}, "policy": "a"},
  {"match": {"route": "/pkg.S/M", "full_method": "/pkg.S/N"}, "policy": "a"},
  {"match": {"route": "/pkg.S/M", "full_method": "/pkg.S/M"}, "policy": "a"}]}`,
		"empty":                " \n",
		"a fraction of a cost": `{"policies": {"a": {"limits": ["1/s"], "cost": 1.9}}}`,
		"policy fields": `{"policies": {
  "a": {"limits": ["1/s"], "key": "user", "priority": "urgent"},
  "b": {"limits": ["1/s"], "key": "user", "concurrency": -1},
  "c": {"limits": ["1/s"], "key": "user", "shadow": true, "concurrency": 2},
  "d": {"key": "user", "concurrency": 2},
  "e": {"key": "user"}}}`,
	}
	want := map[string]string{
		"policy fields": `rules: invalid rules: rules.json:2: policy "a": priority "urgent" is not one of critical, normal, sheddable
rules: invalid rules: rules.json:3: policy "b": concurrency -1 is below 0
rules: invalid rules: rules.json:4: policy "c": shadow and concurrency: a shadow policy decides rate limits only, and a permit would be held for real
rules: invalid rules: rules.json:6: policy "e": no limits and no concurrency`,
		"unknown top field":    "rules: invalid rules: rules.json:1: unknown field polices (version, default, policies, rules)",
		"unknown policy field": `rules: invalid rules: rules.json:2: policy "a": unknown field "burst" (limits, key, cost, priority, shadow, concurrency)`,
		"trailing word":        "rules: invalid rules: rules.json:1: data after the file's object",
		"second object":        "rules: invalid rules: rules.json:2: data after the file's object",
		"two limits":           `rules: invalid rules: rules.json:3: policy "a": field "limits" given twice`,
		"two policies fields":  `rules: invalid rules: rules.json:3: field "policies" given twice`,
		"two routes":           `rules: invalid rules: rules.json:3: rule 1: field "route" given twice`,
		"two header values":    `rules: invalid rules: rules.json:2: rule 1: field "X-A" given twice`,
		"no policies":          `rules: invalid rules: rules.json:1: no "policies" (a file read while it was written?)`,
		"routes that cannot match": `rules: invalid rules: rules.json:2: rule 1: route "POST" has no path: a pattern ("POST /login", "/items/:id") or a gRPC full method
rules: invalid rules: rules.json:3: rule 2: route "POST /login" and method "GET" never both hold
rules: invalid rules: rules.json:5: rule 4: route "/pkg.S/M" and full method "/pkg.S/N" never both hold`,
		"empty":                "rules: invalid rules: rules.json:1: an empty file",
		"a fraction of a cost": `rules: invalid rules: rules.json:1: policy "a": json: cannot unmarshal number 1.9 into Go value of type int`,
		"everything else": `rules: invalid rules: rules.json:3: policy "a": ratelimit: invalid limit: "10/week": "week" is a calendar period: a quota names its time zone, as in 10/week@UTC
rules: invalid rules: rules.json:3: policy "a": key function "nobody" is not registered
rules: invalid rules: rules.json:4: policy "b": ratelimit: invalid limit: burst 20000 is above the sliding window log's maximum of 10000
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
	srv := httptest.NewServer(httpmw.New(limiter, httpmw.WithRules(live))(mux))
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

// Watch puts a changed file in force once two reads agree, and keeps the set in force when
// the new content fails, telling the error handler once.
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
		assert.Equal(t, "7", live.Set().Version, "one read of a content is not enough")
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, "8", live.Set().Version, "the same bytes one interval later: in force")

		require.NoError(t, os.WriteFile(path, []byte(`{"version": "9", "default": "nope"}`), 0o600))
		for range 3 {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		assert.Equal(t, "8", live.Set().Version, "a bad file changes nothing")
		require.Len(t, errs, 1)
		assert.True(t, errors.Is(errs[0], rules.ErrInvalid))

		// A file gone for one read (an editor that deletes and writes anew) is not an error;
		// gone for good, it is one, however many reads miss it.
		require.NoError(t, os.Remove(path))
		time.Sleep(time.Second)
		synctest.Wait()
		require.NoError(t, os.WriteFile(path, next, 0o600))
		time.Sleep(time.Second)
		synctest.Wait()
		require.NoError(t, os.Remove(path))
		for range 4 {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		require.Len(t, errs, 2)
		assert.ErrorIs(t, errs[1], os.ErrNotExist)
		assert.Equal(t, "8", live.Set().Version)
		cancel()
		<-done
	})
}

// A policy's concurrency holds its requests, per key, to at most that many in flight, with
// permits of the middleware's limiter (WithConcurrencyFunc, whose max of 0 leaves the other
// policies unlimited); the rate-limited policies beside it are unaffected, and a policy may
// have a concurrency and no limits. Under WithShadow no policy holds a permit.
func TestPolicyConcurrency(t *testing.T) {
	for _, shadow := range []bool{false, true} {
		t.Run(fmt.Sprint("shadow=", shadow), func(t *testing.T) { policyConcurrency(t, shadow) })
	}
}

func policyConcurrency(t *testing.T, shadow bool) {
	limiter := local.New()
	t.Cleanup(func() { _ = limiter.Close() })
	conc := clocal.New(clocal.WithQueue(-1, clocal.OldestFirst))
	t.Cleanup(func() { _ = conc.Close() })
	live := rules.New(registry)
	require.NoError(t, live.Load("rules.json", []byte(`{
  "default": "free",
  "policies": {
    "export": {"concurrency": 1, "key": "user"},
    "free":   {"limits": ["100/min"], "key": "user"}
  },
  "rules": [{"match": {"route": "GET /export"}, "policy": "export"}]
}`)))
	entered, release := make(chan struct{}), make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /export", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			entered <- struct{}{}
			<-release
		}
	})
	mux.HandleFunc("GET /items", func(http.ResponseWriter, *http.Request) {})
	opts := []httpmw.Option{httpmw.WithRules(live),
		httpmw.WithConcurrencyFunc(conc, func(*http.Request) int { return 0 })}
	if shadow {
		// Every policy shadow, beside the permits of WithConcurrencyFunc: a permit is held for
		// real, so the middleware refuses the pair at construction.
		opts = append(opts, httpmw.WithShadow())
		assert.PanicsWithValue(t, "httpmw: New: WithConcurrency and WithShadow: shadow mode decides rate limits only, and a permit is held for real; pass one of them",
			func() { httpmw.New(limiter, opts...) })
		return
	}
	srv := httptest.NewServer(httpmw.New(limiter, opts...)(mux))
	t.Cleanup(srv.Close)
	status := func(path, user string, hold bool) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-User", user)
		if hold {
			req.Header.Set("X-Hold", "1")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	held := make(chan int)
	go func() { held <- status("/export", "42", true) }()
	<-entered
	assert.Equal(t, http.StatusServiceUnavailable, status("/export", "42", false), "user 42 has its one export running")
	assert.Equal(t, http.StatusOK, status("/export", "7", false), "another user has a permit of their own")
	assert.Equal(t, http.StatusOK, status("/items", "42", false), "the free plan holds no permit")
	close(release)
	assert.Equal(t, http.StatusOK, <-held)
	assert.Equal(t, http.StatusOK, status("/export", "42", false), "the permit was released")
}

// Beside WithRules, WithConcurrency gives the permits and the max of the policies that name
// no concurrency; a policy's own concurrency wins over it.
func TestPolicyConcurrencyBesideMiddlewareMax(t *testing.T) {
	limiter := local.New()
	t.Cleanup(func() { _ = limiter.Close() })
	conc := clocal.New(clocal.WithQueue(-1, clocal.OldestFirst))
	t.Cleanup(func() { _ = conc.Close() })
	live := rules.New(registry)
	require.NoError(t, live.Load("rules.json", []byte(`{
  "default": "free",
  "policies": {
    "export": {"concurrency": 1, "key": "user"},
    "free":   {"limits": ["100/min"], "key": "user"}
  },
  "rules": [{"match": {"route": "GET /export"}, "policy": "export"}]
}`)))
	entered, release := make(chan struct{}), make(chan struct{})
	hold := func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Hold") != "" {
			entered <- struct{}{}
			<-release
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /export", hold)
	mux.HandleFunc("GET /items", hold)
	srv := httptest.NewServer(httpmw.New(limiter, httpmw.WithRules(live), httpmw.WithConcurrency(conc, 2))(mux))
	t.Cleanup(srv.Close)
	status := func(path string, hold bool) int {
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-User", "42")
		if hold {
			req.Header.Set("X-Hold", "1")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	held := make(chan int, 3)
	for _, path := range []string{"/export", "/items", "/items"} {
		go func() { held <- status(path, true) }()
		<-entered
	}
	assert.Equal(t, http.StatusServiceUnavailable, status("/export", false), "the policy's 1, not the middleware's 2")
	assert.Equal(t, http.StatusServiceUnavailable, status("/items", false), "the middleware's 2 for a policy without one")
	close(release)
	for range 3 {
		assert.Equal(t, http.StatusOK, <-held)
	}
	assert.Equal(t, http.StatusOK, status("/export", false))
	assert.Equal(t, http.StatusOK, status("/items", false))
}

// WithRules refuses, at construction, the options that would give what the rules give.
func TestWithRulesConflicts(t *testing.T) {
	limiter := local.New()
	t.Cleanup(func() { _ = limiter.Close() })
	live := rules.New(registry)
	conc := clocal.New()
	t.Cleanup(func() { _ = conc.Close() })
	cases := map[string][]httpmw.Option{
		"httpmw: New: WithRules and WithLimit both give the limits: pass one of them": {httpmw.WithRules(live), httpmw.WithLimit(ratelimit.PerSecond(1))},
		"httpmw: New: WithLimits and WithRules both give the limits: pass one of them": {
			httpmw.WithLimits(func(*http.Request) []ratelimit.Request { return nil }), httpmw.WithRules(live)},
		"httpmw: New: WithKeyFunc and WithRules: the rules give each request its key and cost; pass one of them": {
			httpmw.WithRules(live), httpmw.WithKeyFunc(func(*http.Request) (string, error) { return "k", nil })},
		"httpmw: New: WithRules: nil *rules.Rules": {httpmw.WithRules(nil)},
	}
	for want, opts := range cases {
		assert.PanicsWithValue(t, want, func() { httpmw.New(limiter, opts...) })
	}
	assert.PanicsWithValue(t, "grpcmw: UnaryClientInterceptor: WithWait and WithRules cannot be combined: Limiter.Wait takes one limit, and a policy may have several",
		func() { grpcmw.UnaryClientInterceptor(limiter, grpcmw.WithRules(live), grpcmw.WithWait()) })
}

// A request is decided under the set in force when it arrived, from its policy to its
// bucket: here its key function reloads the rules (to a limit of 5 a minute) after its
// policy was found, and the request is still limited by the 2 a minute of its own set.
func TestOneSetPerRequest(t *testing.T) {
	limiter := local.New(local.WithClock(func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }))
	t.Cleanup(func() { _ = limiter.Close() })
	const two = `{"version": "2", "default": "a", "policies": {"a": {"limits": ["2/min"], "key": "reload"}}}`
	const five = `{"version": "5", "default": "a", "policies": {"a": {"limits": ["5/min"], "key": "reload"}}}`
	var live *rules.Rules
	live = rules.New(rules.Registry{"reload": func(r rules.Request) (string, error) {
		if r.Header("X-Reload") != "" {
			require.NoError(t, live.Load("rules.json", []byte(five)))
		}
		return "k", nil
	}})
	require.NoError(t, live.Load("rules.json", []byte(two)))
	h := httpmw.New(limiter, httpmw.WithRules(live))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("X-Reload", "1")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	assert.Equal(t, "2", w.Header().Get("X-RateLimit-Limit"), "the limit of the set the request arrived under")
	assert.Equal(t, "1", w.Header().Get("X-RateLimit-Remaining"))
	assert.Equal(t, "5", live.Set().Version, "the reload took effect for the requests that follow")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
	assert.Equal(t, "5", w.Header().Get("X-RateLimit-Limit"))
}

// incoming reads a call's incoming metadata, as grpcmw's reader does.
func incoming(ctx context.Context, name string) string {
	if v := metadata.ValueFromIncomingContext(ctx, name); len(v) > 0 {
		return v[0]
	}
	return ""
}

// A gRPC call is read by its full method and its metadata.
func TestGRPCRequest(t *testing.T) {
	live := rules.New(rules.Registry{"caller": rules.GRPCKey(func(ctx context.Context, _ string) (string, error) { return "c", nil })})
	require.NoError(t, live.Load("rules.json", []byte(`{"policies": {
    "batch":  {"limits": ["1/s"], "key": "caller"},
    "search": {"limits": ["10/s"], "key": "caller"}},
  "rules": [
    {"match": {"full_method": "/pkg.S/Search", "header": {"X-Batch": "yes"}}, "policy": "batch"},
    {"match": {"route": "/pkg.S/Search"}, "policy": "search"}]}`)))
	s := live.Set()
	batch := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-batch", "yes"))
	assert.Equal(t, "batch", s.Match(rules.FromGRPC(batch, "/pkg.S/Search", incoming)).Name)
	assert.Equal(t, "search", s.Match(rules.FromGRPC(context.Background(), "/pkg.S/Search", incoming)).Name)
	assert.Nil(t, s.Match(rules.FromGRPC(batch, "/pkg.S/Other", incoming)))
	key, err := s.Match(rules.FromGRPC(batch, "/pkg.S/Search", incoming)).KeyOf(rules.FromGRPC(batch, "/pkg.S/Search", incoming))
	assert.Equal(t, []any{"c", nil}, []any{key, err})
	// An HTTP key function has no key for a call, and a gRPC one none for an HTTP request.
	_, err = rules.GRPCKey(func(context.Context, string) (string, error) { return "c", nil })(
		rules.FromHTTP(httptest.NewRequest(http.MethodGet, "/", nil), "GET /"))
	assert.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
}

// On net/http the route is the pattern http.ServeMux routed the request by, when the
// middleware wraps a handler the mux routes to.
func TestRouteInsideMux(t *testing.T) {
	limiter := local.New(local.WithClock(func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }))
	t.Cleanup(func() { _ = limiter.Close() })
	live := rules.New(registry)
	require.NoError(t, live.Load("rules.json", []byte(`{"policies": {"items": {"limits": ["1/min"], "key": "client-ip"}},
  "rules": [{"match": {"route": "GET /items/{id}"}, "policy": "items"}]}`)))
	mw := httpmw.New(limiter, httpmw.WithRules(live))
	mux := http.NewServeMux()
	mux.Handle("GET /items/{id}", mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	mux.Handle("GET /other", mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	code := func(path string) int {
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code
	}
	assert.Equal(t, []int{200, 429, 200, 200}, []int{code("/items/1"), code("/items/2"), code("/other"), code("/other")},
		"one bucket for the pattern; no rule for /other, and no default: not limited")
}

// Through the gRPC interceptor, called as a server calls it: a rule on metadata selects
// the calls that carry it.
func TestGRPCMetadataThroughInterceptor(t *testing.T) {
	limiter := local.New(local.WithClock(func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }))
	t.Cleanup(func() { _ = limiter.Close() })
	live := rules.New(rules.Registry{"caller": func(rules.Request) (string, error) { return "c", nil }})
	require.NoError(t, live.Load("rules.json", []byte(`{"default": "search", "policies": {
    "batch":  {"limits": ["1/min"], "key": "caller"},
    "search": {"limits": ["10/min"], "key": "caller"}},
  "rules": [{"match": {"header": {"X-Batch": "yes"}}, "policy": "batch"}]}`)))
	icpt := grpcmw.UnaryServerInterceptor(limiter, grpcmw.WithRules(live))
	info := &grpc.UnaryServerInfo{FullMethod: "/pkg.S/Search"}
	call := func(ctx context.Context) codes.Code {
		_, err := icpt(ctx, nil, info, func(context.Context, any) (any, error) { return nil, nil })
		return status.Code(err)
	}
	batch := metadata.NewIncomingContext(context.Background(), metadata.Pairs("x-batch", "yes"))
	assert.Equal(t, []codes.Code{codes.OK, codes.ResourceExhausted, codes.OK},
		[]codes.Code{call(batch), call(batch), call(context.Background())})
}

// A policy that names no key is keyed by the middleware's default key: the client address
// through net/http, the full method through gRPC; its buckets are the policy's name and
// that key, as with limits given in Go.
func TestMiddlewareKey(t *testing.T) {
	limiter := local.New(local.WithClock(func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }))
	t.Cleanup(func() { _ = limiter.Close() })
	live := rules.New(rules.Registry{}, rules.WithValidator(limiter))
	require.NoError(t, live.Load("rules.json", []byte(`{"default": "all", "policies": {
    "all":  {"limits": ["3/min"]},
    "both": {"limits": ["5/min", "9/h"]}},
  "rules": [{"match": {"route": "GET /both"}, "policy": "both"}]}`)))
	p, _ := live.Set().Policy("all")
	_, err := p.KeyOf(rules.Request{})
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "no key function of its own")

	mux := http.NewServeMux()
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	mux.Handle("GET /one", ok)
	mux.Handle("GET /both", ok)
	srv := httptest.NewServer(httpmw.New(limiter, httpmw.WithRules(live))(mux))
	t.Cleanup(srv.Close)
	for _, path := range []string{"/one", "/both", "/both"} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	}
	remaining := func(bucket string, l ratelimit.Limit) int {
		res, err := limiter.Peek(context.Background(), bucket, l, 1)
		require.NoError(t, err)
		return res.Remaining
	}
	both, _ := live.Set().Policy("both")
	assert.Equal(t, []int{2 - 1, 5 - 2 - 1, 9 - 2 - 1}, []int{
		remaining("all|ip:127.0.0.1", p.Limits[0]),
		remaining("both|ip:127.0.0.1", both.Limits[0]),
		remaining("both#1|ip:127.0.0.1", both.Limits[1])})

	icpt := grpcmw.UnaryServerInterceptor(limiter, grpcmw.WithRules(live))
	for range 2 {
		_, err := icpt(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/pkg.S/Search"},
			func(context.Context, any) (any, error) { return nil, nil })
		require.NoError(t, err)
	}
	assert.Equal(t, 3-2-1, remaining("all|rpc:/pkg.S/Search", p.Limits[0]))
}

// A policy on the middleware's key costs a request no allocation more than the same limits
// given in Go: the bucket key is built once, from the key's parts (one fewer than WithLimits
// with a key function, for two limits).
func TestNoAllocationOverGo(t *testing.T) {
	limiter := local.New()
	t.Cleanup(func() { _ = limiter.Close() })
	l, loose := ratelimit.Limit{Rate: 1e6, Burst: 1e9}, ratelimit.Limit{Rate: 1e6, Burst: 2e9}
	live := rules.New(rules.Registry{})
	require.NoError(t, live.Load("rules.json", []byte(`{"default": "items", "policies": {
    "items": {"limits": ["`+l.String()+`"]},
    "two":   {"limits": ["`+l.String()+`", "`+loose.String()+`"]}},
  "rules": [{"match": {"route": "GET /two"}, "policy": "two"}]}`)))
	ok := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	mux := http.NewServeMux()
	mux.Handle("GET /two", ok)
	allocs := func(h http.Handler, path string) float64 {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", path, nil)
		return testing.AllocsPerRun(200, func() {
			clear(w.Header())
			h.ServeHTTP(w, r)
		})
	}
	inGo := allocs(httpmw.New(limiter, httpmw.WithLimit(l), httpmw.WithPolicyName("items"))(ok), "/items")
	byRules := allocs(httpmw.New(limiter, httpmw.WithRules(live))(ok), "/items")
	assert.LessOrEqual(t, byRules, inGo) // equal; under -race the counts shift

	key := httpkeys.ClientIP()
	twoInGo := allocs(httpmw.New(limiter, httpmw.WithLimits(func(r *http.Request) []ratelimit.Request {
		k, _ := key(r)
		return []ratelimit.Request{{Key: k, Limit: l, Name: "two"}, {Key: k, Limit: loose, Name: "two"}}
	}))(mux), "/two")
	twoByRules := allocs(httpmw.New(limiter, httpmw.WithRules(live))(mux), "/two")
	assert.Less(t, twoByRules, twoInGo, "the key's parts spare the key of its own")
}

// A policy that names no key has no key function: AppendLimits gives its limits an empty
// Key, which the middleware fills with its default key, as its doc says, and never panics.
func TestAppendLimitsNoKey(t *testing.T) {
	live := rules.New(rules.Registry{})
	require.NoError(t, live.Load("rules.json", []byte(`{"default": "all", "policies": {"all": {"limits": ["3/min", "9/h"]}}}`)))
	got := live.Set().AppendLimits(nil, rules.FromHTTP(httptest.NewRequest(http.MethodGet, "/", nil), "GET /"))
	assert.Equal(t, []ratelimit.Request{
		{Key: "", Limit: kept(ratelimit.PerMinute(3)), Name: "all"},
		{Key: "", Limit: kept(ratelimit.PerHour(9)), Name: "all"},
	}, got)
}

// One route form holds on every framework: "POST /login" for a POST routed by Gin's
// "/login" (whose FullPath has no method), by net/http's "POST /login" or "/login"; a
// route without a method for any method of its path; a gRPC full method for that call.
// Each policy is 1 an hour on the middleware's key: the second request a rule matches is
// denied, and a request no rule matches (a GET of /login; no default) is not limited.
func TestRouteFormsEveryFramework(t *testing.T) {
	const file = `{"policies": {"login": {"limits": ["1/h"]}, "export": {"limits": ["1/h"]}, "call": {"limits": ["1/h"]}},
  "rules": [
    {"match": {"route": "POST /login"}, "policy": "login"},
    {"match": {"route": "/export"}, "policy": "export"},
    {"match": {"route": "/pkg.S/M"}, "policy": "call"}]}`
	setup := func() (*local.Limiter, *rules.Rules) { // buckets of its own
		limiter := local.New(local.WithClock(func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }))
		t.Cleanup(func() { _ = limiter.Close() })
		live := rules.New(rules.Registry{})
		require.NoError(t, live.Load("rules.json", []byte(file)))
		return limiter, live
	}
	ok := func(http.ResponseWriter, *http.Request) {}
	gin.SetMode(gin.ReleaseMode)
	for name, handler := range map[string]func(*local.Limiter, *rules.Rules) http.Handler{
		"gin": func(l *local.Limiter, live *rules.Rules) http.Handler {
			e := gin.New()
			e.Use(ginmw.New(l, ginmw.WithRules(live)))
			e.POST("/login", func(*gin.Context) {})
			e.GET("/login", func(*gin.Context) {})
			e.Any("/export", func(*gin.Context) {})
			return e
		},
		"net/http, patterns with methods": func(l *local.Limiter, live *rules.Rules) http.Handler {
			mux := http.NewServeMux()
			mux.HandleFunc("POST /login", ok)
			mux.HandleFunc("GET /login", ok)
			mux.HandleFunc("GET /export", ok)
			mux.HandleFunc("DELETE /export", ok)
			return httpmw.New(l, httpmw.WithRules(live))(mux)
		},
		"net/http, patterns without": func(l *local.Limiter, live *rules.Rules) http.Handler {
			mux := http.NewServeMux()
			mux.HandleFunc("/login", ok)
			mux.HandleFunc("/export", ok)
			return httpmw.New(l, httpmw.WithRules(live))(mux)
		},
	} {
		h := handler(setup())
		var got []int
		for _, r := range [][2]string{{"POST", "/login"}, {"POST", "/login"}, {"GET", "/login"}, {"GET", "/login"},
			{"GET", "/export"}, {"DELETE", "/export"}} {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, httptest.NewRequest(r[0], r[1], nil))
			got = append(got, w.Code)
		}
		assert.Equal(t, []int{200, 429, 200, 200, 200, 429}, got, name)
	}
	l, live := setup()
	icpt := grpcmw.UnaryServerInterceptor(l, grpcmw.WithRules(live))
	call := func(method string) codes.Code {
		_, err := icpt(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: method},
			func(context.Context, any) (any, error) { return nil, nil })
		return status.Code(err)
	}
	assert.Equal(t, []codes.Code{codes.OK, codes.ResourceExhausted, codes.OK},
		[]codes.Code{call("/pkg.S/M"), call("/pkg.S/M"), call("/pkg.S/Other")}, "grpc")
}
