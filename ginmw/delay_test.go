package ginmw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
)

// shaper stands in for a backend running ratelimit.LeakyBucket: it allows every request
// with a fixed Delay (leakybucket_test.go runs the real one).
type shaper struct {
	ratelimit.Limiter
	delay time.Duration
}

func (s shaper) AllowN(_ context.Context, _ string, l ratelimit.Limit, _ int) (ratelimit.Result, error) {
	return ratelimit.Result{Allowed: true, Limit: l, Remaining: 1, Delay: s.delay}, nil
}

func TestDelayHoldsTheRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRouter(ginmw.New(shaper{delay: 1500 * time.Millisecond}, ginmw.WithLimit(ratelimit.PerSecond(1))))
		start := time.Now()
		w := perform(r, http.MethodGet, "/v1/items/1", client)
		assert.Equal(t, http.StatusOK, w.Code)
		assert.Equal(t, 1500*time.Millisecond, time.Since(start)) // synctest's clock: exact
	})
}

func TestDelayEndsWithTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := gin.New()
		r.Use(ginmw.New(shaper{delay: time.Hour}, ginmw.WithLimit(ratelimit.PerSecond(1))))
		r.GET("/", func(c *gin.Context) { c.String(http.StatusOK, "ok") })
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
		w := httptest.NewRecorder()
		start := time.Now()
		r.ServeHTTP(w, req)
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		assert.Equal(t, time.Second, time.Since(start))
		assert.Empty(t, w.Body.String(), "the handler did not run")
	})
}
