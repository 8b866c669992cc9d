package ginmw_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/keyfuncs"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// A request that cannot be keyed is limited in one shared bucket, not let through.
func TestUnkeyedRequestsShareABucket(t *testing.T) {
	l, _ := newLimiter(t)
	var reported []error
	r := newRouter(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(2)),
		ginmw.WithKeyFunc(keyfuncs.Header("X-API-Key")),
		ginmw.WithErrorHandler(func(_ *gin.Context, err error) { reported = append(reported, err) })))

	// Different peers, no key: one bucket between them.
	got := []int{
		perform(r, http.MethodGet, "/v1/items/1", "192.0.2.1:1").Code,
		perform(r, http.MethodGet, "/v1/items/1", "192.0.2.2:1").Code,
		perform(r, http.MethodGet, "/v1/items/1", "192.0.2.3:1").Code,
	}
	assert.Equal(t, []int{200, 200, 429}, got)
	require.Len(t, reported, 3)
	assert.ErrorIs(t, reported[0], ratelimit.ErrInvalidArgument)
	assert.EqualError(t, reported[0],
		`ginmw: no key, limiting as "unkeyed": ratelimit: empty key: header X-API-Key is missing or blank`)

	// A keyed client has its own bucket.
	assert.Equal(t, []int{200, 200, 429}, codes(r, 3, client, "X-API-Key", "k1"))

	// A key function returning "" with no error counts as a failure too.
	l2, _ := newLimiter(t)
	r = newRouter(ginmw.New(l2, ginmw.WithLimit(ratelimit.PerMinute(1)),
		ginmw.WithKeyFunc(func(*gin.Context) (string, error) { return "", nil })))
	assert.Equal(t, []int{200, 429}, codes(r, 2, client))
}

// An error handler may refuse unkeyed requests instead.
func TestErrorHandlerCanAnswer(t *testing.T) {
	l, _ := newLimiter(t)
	r := newRouter(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(2)),
		ginmw.WithKeyFunc(keyfuncs.Header("X-API-Key")),
		ginmw.WithErrorHandler(func(c *gin.Context, err error) {
			c.AbortWithStatusJSON(http.StatusUnauthorized, gin.H{"error": "missing API key"})
		})))
	w := perform(r, http.MethodGet, "/v1/items/1", client)
	assert.Equal(t, http.StatusUnauthorized, w.Code)
	assert.Equal(t, `{"error":"missing API key"}`, w.Body.String())
}

// The limiter fails for a real reason: it is closed, and answers ErrClosed.
func TestErrorPolicy(t *testing.T) {
	tests := []struct {
		closed   bool
		wantCode int
		wantBody string
	}{
		{false, http.StatusOK, "ok"},
		{true, http.StatusServiceUnavailable, `{"error":"rate limiter unavailable"}`},
	}
	for _, tt := range tests {
		t.Run(policyNames[tt.closed], func(t *testing.T) {
			l, _ := newLimiter(t)
			require.NoError(t, l.Close())
			var reported []error
			r := newRouter(ginmw.New(l, withPolicy(tt.closed, ginmw.WithLimit(ratelimit.PerMinute(1)),
				ginmw.WithErrorHandler(func(_ *gin.Context, err error) { reported = append(reported, err) }))...))
			for range 3 {
				w := perform(r, http.MethodGet, "/v1/items/1", client)
				assert.Equal(t, tt.wantCode, w.Code)
				assert.Equal(t, tt.wantBody, w.Body.String())
				assert.Equal(t, [6]string{}, rateHeaders(w), "no decision, no rate-limit headers")
			}
			require.Len(t, reported, 3)
			assert.ErrorIs(t, reported[0], ratelimit.ErrClosed)
		})
	}
}

// By default the error goes to c.Errors, where gin.Logger prints it.
func TestDefaultErrorHandlerUsesGinErrors(t *testing.T) {
	l, _ := newLimiter(t)
	require.NoError(t, l.Close())
	var errs []string
	r := gin.New()
	r.Use(func(c *gin.Context) { c.Next(); errs = c.Errors.Errors() })
	r.Use(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(1))))
	r.GET("/", func(c *gin.Context) { c.Status(http.StatusNoContent) })
	assert.Equal(t, http.StatusNoContent, perform(r, http.MethodGet, "/", client).Code)
	assert.Equal(t, []string{"ginmw: ratelimit: limiter closed"}, errs)
}

func TestNewPanics(t *testing.T) {
	l, _ := newLimiter(t)
	assert.PanicsWithValue(t, "ginmw: New: nil Limiter",
		func() { ginmw.New(nil, ginmw.WithLimit(ratelimit.PerMinute(1))) })
	assert.PanicsWithValue(t, "ginmw: New: no limit configured: pass WithLimit, WithRouteLimits, WithLimitFunc, WithLimits or WithRules",
		func() { ginmw.New(l) })
	assert.PanicsWithValue(t, "ginmw: New: no limit configured: pass WithLimit, WithRouteLimits, WithLimitFunc, WithLimits or WithRules",
		func() { ginmw.New(l, ginmw.WithLimitFunc(nil)) })
	assert.PanicsWithValue(t, "ginmw: New: WithLimit(0/s burst 5): ratelimit: invalid limit: rate 0 is not a finite number greater than zero",
		func() { ginmw.New(l, ginmw.WithLimit(ratelimit.Limit{Burst: 5})) })
	// Two limit options conflict: neither silently wins.
	assert.PanicsWithValue(t, "ginmw: New: WithLimit and WithLimitFunc both give the limits: pass one of them",
		func() {
			ginmw.New(l, ginmw.WithLimit(ratelimit.Limit{Burst: 5}),
				ginmw.WithLimitFunc(func(*gin.Context) ratelimit.Limit { return ratelimit.PerSecond(1) }))
		})
	// A fixed zero limit is a number missing from the configuration, not "unlimited".
	assert.PanicsWithValue(t, "ginmw: New: WithLimit(0/s burst 0): the zero Limit (no limit at all): a fixed limit must be a valid limit; give ratelimit.Unlimited, or exempt requests with WithSkipFunc, instead",
		func() { ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(0))) })
	// WithLimits gives keys and costs: a key or cost function beside it is refused.
	multi := ginmw.WithLimits(func(*gin.Context) []ratelimit.Request { return nil })
	assert.PanicsWithValue(t, "ginmw: New: WithKeyFunc and WithLimits: WithLimits gives each request its keys and costs; pass one of them",
		func() { ginmw.New(l, multi, ginmw.WithKeyFunc(func(*gin.Context) (string, error) { return "k", nil })) })
	assert.PanicsWithValue(t, "ginmw: New: WithCostFunc and WithLimits: WithLimits gives each request its keys and costs; pass one of them",
		func() { ginmw.New(l, ginmw.WithCostFunc(func(*gin.Context) int { return 2 }), multi) })
	assert.PanicsWithValue(t, "ginmw: New: WithRouteLimits and WithLimits both give the limits: pass one of them",
		func() { ginmw.New(l, ginmw.WithRouteLimits(nil, ratelimit.PerMinute(1)), multi) })
	// A typed nil limiter is a nil limiter.
	assert.PanicsWithValue(t, "ginmw: New: nil Limiter",
		func() { ginmw.New((*local.Limiter)(nil), ginmw.WithLimit(ratelimit.PerMinute(1))) })
}

// A fixed limit the backend rejects, though Limit.Validate accepts it, panics at start-up
// rather than failing on every request: the backends say so through ValidateLimit.
func TestNewAsksTheBackend(t *testing.T) {
	log := local.New(local.WithClock(ratelimittest.NewClock().Now), local.WithAlgorithm(ratelimit.SlidingWindowLog))
	t.Cleanup(func() { _ = log.Close() })
	tooLong := ratelimit.Limit{Rate: 1, Burst: args.MaxLogBurst + 1}
	assert.PanicsWithValue(t, fmt.Sprintf("ginmw: New: WithLimit(%v): ratelimit: invalid limit: burst %d is above the sliding window log's maximum of %d",
		tooLong, tooLong.Burst, args.MaxLogBurst),
		func() { ginmw.New(log, ginmw.WithLimit(tooLong)) })
	assert.PanicsWithValue(t, "ginmw: New: WithRouteLimits: /login: 2000000/s burst 1: ratelimit: invalid limit: rate 2e+06 is above the Redis backend's maximum of 1e+06 per second",
		func() {
			redisLimiter, err := distributed.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
			require.NoError(t, err)
			ginmw.New(redisLimiter, ginmw.WithRouteLimits(map[string]ratelimit.Limit{
				"/login": {Rate: 2e6, Burst: 1},
			}, ratelimit.Limit{}))
		})
	// A limit the backend accepts, and the zero Limit, pass.
	assert.NotPanics(t, func() { ginmw.New(log, ginmw.WithLimit(ratelimit.PerMinute(5)), nil) })
}

// policyNames names the answers to a failing limiter in subtests, by whether the middleware
// fails closed.
var policyNames = map[bool]string{false: "FailOpen", true: "FailClosed"}

// withPolicy returns opts, with WithFailClosed when closed.
func withPolicy(closed bool, opts ...ginmw.Option) []ginmw.Option {
	if closed {
		return append(opts, ginmw.WithFailClosed())
	}
	return opts
}
