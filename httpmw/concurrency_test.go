package httpmw_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	cdistributed "github.com/sluice-go/ratelimit/concurrency/distributed"
	"github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/otelmetrics/otelmetricstest"
)

// WithConcurrency alone (no rate limit, a nil rate limiter): one export per client at a
// time. While the first runs, a second finds no permit and no queue: 503 with
// Retry-After 1; once the first is done, the next one runs.
func TestConcurrencyAlone(t *testing.T) {
	conc := local.New(local.WithQueue(-1, local.OldestFirst))
	t.Cleanup(func() { _ = conc.Close() })
	entered, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slow") == "1" {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})
	obs, reader := otelmetricstest.NewObserver(t)
	srv := httptest.NewServer(httpmw.New(nil, httpmw.WithConcurrency(conc, 1), httpmw.WithObserver(obs))(slow))
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

	// The observer counts the concurrency limit's decisions, and no rate limit's.
	got := otelmetricstest.Collect(t, reader)
	assert.Equal(t, map[string]int64{
		"ratelimit.policy=default,ratelimit.result=allowed": 2,
		"ratelimit.policy=default,ratelimit.result=denied":  1,
	}, got.Counts(t, "ratelimit.concurrency.requests"))
	assert.NotContains(t, got, "ratelimit.requests")
}

// Rate first, then concurrency: a request the rate limit denies takes no permit.
func TestConcurrencyAfterRate(t *testing.T) {
	conc := local.New(local.WithQueue(-1, local.OldestFirst))
	t.Cleanup(func() { _ = conc.Close() })
	srv := httptest.NewServer(httpmw.New(newLimiter(t), httpmw.WithLimit(ratelimit.PerMinute(1)),
		httpmw.WithConcurrency(conc, 1))(ok))
	t.Cleanup(srv.Close)
	assert.Equal(t, []int{200, 429, 429}, []int{
		send(t, http.MethodGet, srv.URL, ""), send(t, http.MethodGet, srv.URL, ""), send(t, http.MethodGet, srv.URL, "")})
	// the default policy's bucket key
	p, held, err := conc.TryAcquire(t.Context(), "default|ip:127.0.0.1", 1)
	require.NoError(t, err)
	assert.True(t, held, "no permit is held after the requests")
	p.Release()
}

// Configuration mistakes refuse to start.
func TestConcurrencyRefused(t *testing.T) {
	conc := local.New()
	t.Cleanup(func() { _ = conc.Close() })
	assert.PanicsWithValue(t, "httpmw: New: WithConcurrency: max 0 is less than 1",
		func() { httpmw.New(nil, httpmw.WithConcurrency(conc, 0)) })
	assert.PanicsWithValue(t, "httpmw: New: WithConcurrency: nil concurrency.Limiter",
		func() { httpmw.New(nil, httpmw.WithConcurrency((*local.Limiter)(nil), 1)) })
	assert.PanicsWithValue(t, "httpmw: New: nil Limiter",
		func() { httpmw.New(nil, httpmw.WithLimit(ratelimit.PerMinute(1)), httpmw.WithConcurrency(conc, 1)) })
}

// downLimiter returns the Redis concurrency limiter over a loopback port nothing listens on.
func downLimiter(t *testing.T, opts ...cdistributed.Option) concurrency.Limiter {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	l, err := cdistributed.New(client, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// A concurrency limiter that fails (the Redis one, told to return its errors) goes to the
// error policy, as a rate limiter's failure does: fail open runs the handler without a
// permit, fail closed answers 503 "unavailable".
func TestConcurrencyErrorPolicy(t *testing.T) {
	var reported []error
	onError := httpmw.WithErrorHandler(func(_ http.ResponseWriter, _ *http.Request, err error) bool {
		reported = append(reported, err)
		return false
	})
	down := downLimiter(t, cdistributed.WithOnFailure(cdistributed.ReturnError))
	var openObs, closedObs unpermitted
	open := httptest.NewServer(httpmw.New(nil, httpmw.WithConcurrency(down, 1), onError, httpmw.WithObserver(&openObs))(ok))
	t.Cleanup(open.Close)
	closed := httptest.NewServer(httpmw.New(nil, httpmw.WithConcurrency(down, 1), onError,
		httpmw.WithFailClosed(), httpmw.WithObserver(&closedObs))(ok))
	t.Cleanup(closed.Close)
	assert.Equal(t, 200, send(t, http.MethodGet, open.URL, ""))
	assert.Equal(t, 503, send(t, http.MethodGet, closed.URL, ""))
	require.Len(t, reported, 2)
	// The observer is told which request ran without a permit: the one of FailOpen.
	assert.Equal(t, [2]int{1, 1}, openObs.counts(), "errors, unpermitted under FailOpen")
	assert.Equal(t, [2]int{1, 0}, closedObs.counts(), "errors, unpermitted under FailClosed")
}

// unpermitted counts the concurrency decisions that failed, and those whose request ran
// anyway (observe.Decision.Unpermitted).
type unpermitted struct {
	mu          sync.Mutex
	errs, moved int
}

func (u *unpermitted) ObserveDecision(_ context.Context, d observe.Decision) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if d.Concurrency && d.Outcome == observe.OutcomeError {
		u.errs++
	}
	if d.Unpermitted {
		u.moved++
	}
}

func (u *unpermitted) counts() [2]int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return [2]int{u.errs, u.moved}
}

// By default the Redis limiter does not fail when Redis is down: it degrades to this
// instance's share of max, so every error policy runs the request with a permit, and the
// share holds (max 4, two instances: a third request in flight is refused).
func TestConcurrencyDegradesByDefault(t *testing.T) {
	down := downLimiter(t, cdistributed.WithQueue(-1), cdistributed.WithInstances(2))
	entered, release := make(chan struct{}), make(chan struct{})
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("slow") == "1" {
			entered <- struct{}{}
			<-release
		}
		_, _ = io.WriteString(w, "ok")
	})
	srv := httptest.NewServer(httpmw.New(nil, httpmw.WithConcurrency(down, 4),
		httpmw.WithFailClosed())(slow))
	t.Cleanup(srv.Close)
	first := make(chan int, 2)
	for range 2 {
		go func() { first <- send(t, http.MethodGet, srv.URL+"/?slow=1", "") }()
		<-entered
	}
	assert.Equal(t, 503, send(t, http.MethodGet, srv.URL, ""), "the share is full")
	close(release)
	assert.Equal(t, 200, <-first)
	assert.Equal(t, 200, <-first)
	assert.Equal(t, 200, send(t, http.MethodGet, srv.URL, ""))
}
