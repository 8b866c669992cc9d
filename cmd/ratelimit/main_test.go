package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/admin"
	"github.com/sluice-go/ratelimit/internal/bucket"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/rules"
)

// The commands against a real admin handler over loopback: the token travels in the
// Authorization header (from the environment, or -H), without which nothing is served.
func TestCommands(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	limiter := local.New(local.WithClock(func() time.Time { return now }))
	t.Cleanup(func() { _ = limiter.Close() })
	live := rules.New(rules.Registry{"user": func(rules.Request) (string, error) { return "", nil }})
	require.NoError(t, live.Load("rules.json", []byte(`{"version": "3", "policies": {
  "login":  {"limits": ["2/min", "10/h"], "key": "user", "priority": "critical"},
  "export": {"concurrency": 2, "key": "user"},
  "search": {"limits": ["5/s"], "key": "user", "cost": 2, "shadow": true}}}`)))
	srv := httptest.NewServer(http.StripPrefix("/admin", admin.New(limiter, live, func(r *http.Request) bool {
		return r.Header.Get("Authorization") == "Bearer s3cret"
	})))
	t.Cleanup(srv.Close)
	// Two logins of the user "u/1" (a key with a slash), as the middleware takes them.
	for range 2 {
		// as the rules give it
		res, err := limiter.Allow(t.Context(), bucket.Name{Policy: "login"}.Key("u/1"), mustLimit(t, "2/min keep-usage"))
		require.NoError(t, err)
		require.True(t, res.Allowed)
	}
	env := map[string]string{"RATELIMIT_ADMIN": srv.URL + "/admin", "RATELIMIT_AUTHORIZATION": "Bearer s3cret"}
	cli := func(env map[string]string, args ...string) (int, string, string) {
		var out, errOut strings.Builder
		code := run(args, &out, &errOut, func(k string) string { return env[k] })
		return code, out.String(), errOut.String()
	}

	code, out, _ := cli(env, "policies")
	assert.Equal(t, 0, code)
	assert.Equal(t, `version "3"
POLICY  KEY   LIMITS       OTHER
export  user  -            concurrency 2
login   user  2/min, 10/h  critical
search  user  5/s          cost 2, shadow
`, out)
	code, out, _ = cli(env, "peek", "login", "u/1")
	assert.Equal(t, 0, code)
	assert.Equal(t, `LIMIT  NEXT     REMAINING  RETRY AFTER
2/min  denied   0          30s
10/h   allowed  9          0s
`, out)
	code, out, _ = cli(env, "refund", "login", "u/1", "1")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "2/min  allowed  0")
	code, out, _ = cli(env, "reset", "login", "u/1")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "2/min  allowed  1")
	code, out, _ = cli(env, "-json", "peek", "login", "u/1")
	assert.Equal(t, 0, code)
	assert.JSONEq(t, `[{"limit":"2/min","allowed":true,"remaining":1,"retry_after_seconds":0,"full":true},
		{"limit":"10/h","allowed":true,"remaining":9,"retry_after_seconds":0,"full":true}]`, out)

	// A key never seen (the IP without its "ip:") reads as full buckets, and says so; one
	// bucket spent is not "no usage".
	code, out, _ = cli(env, "peek", "login", "127.0.0.1")
	assert.Equal(t, 0, code)
	assert.Equal(t, `LIMIT  NEXT     REMAINING  RETRY AFTER
2/min  allowed  1          0s
10/h   allowed  9          0s
no usage: every bucket is full, as for a key never seen (is KEY written as its key function makes it, ip:127.0.0.1 and not 127.0.0.1?)
`, out)
	_, err := limiter.Allow(t.Context(), bucket.Name{Policy: "login", Limit: 1, Keep: true}.Key("u/1"), mustLimit(t, "10/h keep-usage"))
	require.NoError(t, err)
	code, out, _ = cli(env, "peek", "login", "u/1")
	assert.Equal(t, 0, code)
	assert.NotContains(t, out, "no usage")

	// The header from -H instead of the environment; and none at all.
	noAuth := map[string]string{"RATELIMIT_ADMIN": srv.URL + "/admin"}
	code, _, _ = cli(noAuth, "-H", "Authorization: Bearer s3cret", "policies")
	assert.Equal(t, 0, code)
	code, _, errOut := cli(noAuth, "policies")
	assert.Equal(t, 1, code)
	assert.Equal(t, "ratelimit: 403 Forbidden: forbidden\n", errOut)
	code, _, errOut = cli(env, "peek", "nope", "u/1")
	assert.Equal(t, 1, code)
	assert.Equal(t, "ratelimit: 404 Not Found: no such policy\n", errOut)
	for _, args := range [][]string{{}, {"peek", "login"}, {"refund", "login", "u/1", "0"}, {"-H", "no colon", "policies"}} {
		code, _, _ = cli(env, args...)
		assert.Equal(t, 2, code, args)
	}
}

// -h lists the commands and the environment variables, and exits 0.
func TestHelp(t *testing.T) {
	var out, errOut strings.Builder
	code := run([]string{"-h"}, &out, &errOut, func(string) string { return "" })
	assert.Equal(t, 0, code)
	assert.Empty(t, out.String())
	for _, want := range []string{"policies", "peek   POLICY KEY", "reset  POLICY KEY", "refund POLICY KEY N",
		"RATELIMIT_ADMIN", "RATELIMIT_AUTHORIZATION", "-addr", "-json"} {
		assert.Contains(t, errOut.String(), want)
	}
}

func mustLimit(t *testing.T, s string) ratelimit.Limit {
	l, err := ratelimit.ParseLimit(s)
	require.NoError(t, err)
	return l
}
