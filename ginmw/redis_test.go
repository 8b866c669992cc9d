package ginmw_test

import (
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/internal/testhook"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// newRedisLimiter returns a distributed limiter on a client of addr that honours context
// deadlines and does not retry, built with opts.
func newRedisLimiter(t *testing.T, addr string, opts ...distributed.Option) *distributed.Limiter {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	l, err := distributed.New(c, opts...)
	require.NoError(t, err)
	return l
}

// deadAddr returns a loopback address nothing listens on: it was bound and released.
func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// The PerMinute(2) timeline on a real redis-server, whose scripts read a clock that stands
// still (Redis's own would move on while a loaded machine runs the requests, and every time
// shown is rounded up to whole seconds), with a deadline no loaded machine misses.
func TestRedisPerMinuteTwo(t *testing.T) {
	server := redistest.NewServer(t)
	l := newRedisLimiter(t, server.Addr(), distributed.WithTimeout(10*time.Second),
		testhook.DistributedClock(ratelimittest.NewClock().Now).(distributed.Option))
	r := newRouter(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(2))))

	w1 := perform(r, http.MethodGet, "/v1/items/1", client)
	w2 := perform(r, http.MethodGet, "/v1/items/1", client)
	w3 := perform(r, http.MethodGet, "/v1/items/1", client)
	assert.Equal(t, []int{200, 200, 429}, []int{w1.Code, w2.Code, w3.Code})
	assert.Equal(t, [6]string{"", "2", "1", "30", "", ""}, rateHeaders(w1))
	assert.Equal(t, [6]string{"", "2", "0", "60", "", ""}, rateHeaders(w2))
	assert.Equal(t, [6]string{"30", "2", "0", "60", "", ""}, rateHeaders(w3))
	assert.Equal(t, `{"error":"rate limit exceeded","retry_after":30}`, w3.Body.String())

	// Another client address has its own bucket.
	assert.Equal(t, http.StatusOK, perform(r, http.MethodGet, "/v1/items/1", "198.51.100.1:1").Code)
}

// Redis unreachable: the limiter fails (within its own short timeout) and the policy decides.
func TestRedisDeadAddress(t *testing.T) {
	tests := []struct {
		closed   bool
		wantCode int
		wantBody string
	}{
		{false, http.StatusOK, "ok"},
		{true, http.StatusServiceUnavailable, `{"error":"rate limiter unavailable"}`},
	}
	addr := deadAddr(t)
	for _, tt := range tests {
		t.Run(policyNames[tt.closed], func(t *testing.T) {
			var reported []error
			r := newRouter(ginmw.New(newRedisLimiter(t, addr), withPolicy(tt.closed, ginmw.WithLimit(ratelimit.PerMinute(1)),
				ginmw.WithErrorHandler(func(_ *gin.Context, err error) { reported = append(reported, err) }))...))
			for range 3 {
				w := perform(r, http.MethodGet, "/v1/items/1", client)
				assert.Equal(t, tt.wantCode, w.Code)
				assert.Equal(t, tt.wantBody, w.Body.String())
				assert.Equal(t, [6]string{}, rateHeaders(w))
			}
			require.Len(t, reported, 3)
			for _, err := range reported {
				assert.ErrorContains(t, err, "ginmw: distributed: ")
			}
		})
	}
}
