package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// syncBuffer is a log destination the server's goroutines and the test share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestProduction runs the program against a real Redis: a login flow, the API, a scrape of
// /metrics, an outage of Redis, and the graceful shutdown.
func TestProduction(t *testing.T) {
	server := redistest.NewServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	base := "http://" + ln.Addr().String()
	var logs syncBuffer
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ran := make(chan error, 1)
	go func() {
		ran <- run(ctx, ln, config{RedisAddr: server.Addr(), Instances: 2}, slog.New(slog.NewTextHandler(&logs, nil)))
	}()

	client := &http.Client{Timeout: 5 * time.Second}
	do := func(req *http.Request) (*http.Response, string) {
		t.Helper()
		res, err := client.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(body)
	}
	login := func(password string) int {
		t.Helper()
		form := url.Values{"user": {"alice"}, "password": {password}}
		res, _ := do(newRequest(t, http.MethodPost, base+"/login", strings.NewReader(form.Encode()), "application/x-www-form-urlencoded"))
		return res.StatusCode
	}
	get := func(path string, header ...string) *http.Response {
		t.Helper()
		req := newRequest(t, http.MethodGet, base+path, nil, "")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		res, _ := do(req)
		return res
	}

	// Successful logins give their tokens back: after three of them, the five failures a
	// minute allows are still there, and the sixth is refused with a Retry-After of 12 s
	// (PerMinute(5) gives a token back every 12 s).
	var statuses []int
	for _, password := range []string{"secret", "secret", "secret", "x", "x", "x", "x", "x", "x"} {
		statuses = append(statuses, login(password))
	}
	assert.Equal(t, []int{204, 204, 204, 401, 401, 401, 401, 401, 429}, statuses)

	// The buckets are in Redis, both login limits in one hash slot.
	keys, err := server.Do("KEYS", "*login*")
	require.NoError(t, err)
	assert.ElementsMatch(t, []any{
		"ratelimit:login-minute|{ip:127.0.0.1}:m:tb:0.08333333333333333:5",
		"ratelimit:login-hour|{ip:127.0.0.1}:h:tb:0.005555555555555556:20",
	}, keys)

	// The API limits a signed-in user by name, 10 a second. Its requests are Normal, which
	// leave a tenth of the burst to Critical ones: 9 tokens held, 8 left to a Normal request.
	res := get("/api/items/42", "Authorization", "Bearer alice-token")
	assert.Equal(t, http.StatusOK, res.StatusCode)
	assert.Equal(t, "10", res.Header.Get("X-RateLimit-Limit"))
	assert.Equal(t, "8", res.Header.Get("X-RateLimit-Remaining"))
	userKeys, err := server.Do("KEYS", "ratelimit:api|user:alice:*")
	require.NoError(t, err)
	assert.Len(t, userKeys, 1)

	// /api/ is the Gin router, keyed by client address when no one is signed in. Sheddable
	// /api/stats is refused while the address's bucket still holds its reserve, with Gin's
	// JSON answer; a Normal request from the same address still passes.
	var refused *http.Response
	var body string
	for range 10 {
		res, b := do(newRequest(t, http.MethodGet, base+"/api/stats", nil, ""))
		if res.StatusCode != http.StatusOK {
			refused, body = res, b
			break
		}
	}
	require.NotNil(t, refused, "/api/stats was never refused")
	assert.Equal(t, http.StatusTooManyRequests, refused.StatusCode)
	assert.NotEmpty(t, refused.Header.Get("Retry-After"))
	assert.Contains(t, body, `"error":"rate limit exceeded"`)
	assert.Equal(t, http.StatusOK, get("/api/items/7").StatusCode)

	// /metrics has the series the docs' PromQL reads.
	_, metrics := do(newRequest(t, http.MethodGet, base+"/metrics", nil, ""))
	for _, want := range []string{
		`ratelimit_requests_total{`,
		`ratelimit_policy="login-minute"`,
		`ratelimit_result="denied"`,
		`ratelimit_shadow="false"`,
		`ratelimit_priority="sheddable"`,
		`ratelimit_policy="api"`,
		`ratelimit_decision_duration_seconds_bucket{`,
		`ratelimit_backend="distributed"`,
	} {
		assert.Contains(t, metrics, want)
	}

	// Redis stops: the fallback decides locally, under this instance's share of the limit
	// (one of two: 5 a second, a burst of 5, of which Normal keeps nothing back), and the
	// fifth failure in a row opens the breaker, which logs the outage's start once.
	server.Stop()
	for range 5 {
		assert.Equal(t, http.StatusOK, get("/api/items/1", "Authorization", "Bearer alice-token").StatusCode)
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "rate limiter"), "logs:\n%s", logs.String())
	assert.Contains(t, logs.String(), "breaker")

	// SIGTERM: the server drains and run returns.
	stop()
	select {
	case err := <-ran:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after its context ended")
	}
}

// Without Redis (nothing listens at its address) the program starts all the same, warns
// once, and enforces this instance's share of the limits locally: one of two instances
// holds a login's 5 a minute as 2.5 a minute with a burst of 2 (rounded down), so the third
// failure is refused.
func TestNoRedis(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := dead.Addr().String()
	require.NoError(t, dead.Close())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var logs syncBuffer
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ran := make(chan error, 1)
	go func() {
		ran <- run(ctx, ln, config{RedisAddr: deadAddr, Instances: 2}, slog.New(slog.NewTextHandler(&logs, nil)))
	}()
	client := &http.Client{Timeout: 5 * time.Second}
	var statuses []int
	for range 4 {
		form := url.Values{"user": {"alice"}, "password": {"wrong"}}
		res, err := client.Post("http://"+ln.Addr().String()+"/login", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		_ = res.Body.Close()
		statuses = append(statuses, res.StatusCode)
	}
	assert.Equal(t, []int{401, 401, 429, 429}, statuses)
	assert.Equal(t, 1, strings.Count(logs.String(), "Redis is not answering; starting on local limits"), "logs:\n%s", logs.String())
	assert.NotContains(t, logs.String(), "from=go-redis", "go-redis's lines are at debug level")
	stop()
	require.NoError(t, <-ran)
}

// go-redis's own lines reach the program's logger at debug level, marked as its: dropped
// by a handler at the default level, kept by one at debug.
func TestRedisLog(t *testing.T) {
	var info, debug bytes.Buffer
	redisLog{slog.New(slog.NewTextHandler(&info, nil))}.Printf(context.Background(), "redis: connection pool: %v\n", "dial tcp: refused")
	assert.Empty(t, info.String())
	redisLog{slog.New(slog.NewTextHandler(&debug, &slog.HandlerOptions{Level: slog.LevelDebug}))}.Printf(context.Background(), "redis: connection pool: %v\n", "dial tcp: refused")
	assert.Contains(t, debug.String(), `level=DEBUG msg="redis: connection pool: dial tcp: refused" from=go-redis`)
}

// newRequest builds a request, with a Content-Type when ct is not empty.
func newRequest(t *testing.T, method, target string, body io.Reader, ct string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, target, body)
	require.NoError(t, err)
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	return req
}
