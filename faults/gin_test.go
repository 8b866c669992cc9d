package faults

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// TestGinRedisStopped: Redis is stopped in the middle of a load test through the Gin
// middleware on a loopback HTTP server, then brought back (see outage for what is checked),
// with a local secondary or failing open without one. Limiting through Redis resumes within
// a second of Redis coming back.
func TestGinRedisStopped(t *testing.T) {
	for _, degrade := range []bool{true, false} {
		t.Run(map[bool]string{true: "Degrade", false: "FailOpen"}[degrade], func(t *testing.T) {
			ginOutage(t, degrade, outageWorkers, &redis.Options{}, time.Second)
		})
	}
}

// TestGinSaturatedPool: the same, from two clients, with a go-redis client whose pool
// holds two connections, so that the outage costs it more failed dials than its PoolSize.
// go-redis then stops dialing and re-dials once a second in the background, as any client
// does after a long enough outage: limiting through Redis resumes at most a second plus a
// cooldown after Redis comes back (and a scheduling margin of 250 ms).
func TestGinSaturatedPool(t *testing.T) {
	ginOutage(t, true, 2, &redis.Options{PoolSize: 2}, time.Second+fallback.DefaultCooldown+250*time.Millisecond)
}

// ginOutage runs outage through the Gin middleware with workers clients, on a go-redis
// client of opts (with the address and ContextTimeoutEnabled set). Every request comes from
// 127.0.0.1, so all share one key.
func ginOutage(t *testing.T, degrade bool, workers int, opts *redis.Options, resume time.Duration) {
	noLeaks(t)
	server := redistest.NewServer(t)
	opts.Addr, opts.ContextTimeoutEnabled = server.Addr(), true
	rc := redis.NewClient(opts)
	t.Cleanup(func() { _ = rc.Close() })
	s := newStack(t, rc, degrade, fallback.WithInstances(2))

	r := gin.New()
	r.Use(ginmw.New(s.timed, ginmw.WithLimit(outageLimit)))
	r.GET("/", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	transport := &http.Transport{MaxIdleConnsPerHost: workers}
	t.Cleanup(transport.CloseIdleConnections)
	client := &http.Client{Transport: transport, Timeout: 5 * time.Second}

	outage(t, server, s, degrade, workers, resume, func() int {
		resp, err := client.Get(srv.URL)
		if err != nil {
			return 0
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return resp.StatusCode
	})
}
