package ginmw_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/local"
)

// shaped returns an engine behind a LeakyBucket limiter of limit, whose one route records
// when its handler ran, counted from start.
func shaped(t *testing.T, limit ratelimit.Limit, start time.Time) (*gin.Engine, func() []time.Duration) {
	l := local.New(local.WithAlgorithm(ratelimit.LeakyBucket))
	t.Cleanup(func() { _ = l.Close() })
	var mu sync.Mutex
	var ran []time.Duration
	r := gin.New()
	r.Use(ginmw.New(l, ginmw.WithLimit(limit)))
	r.GET("/", func(c *gin.Context) {
		mu.Lock()
		ran = append(ran, time.Since(start))
		mu.Unlock()
		c.String(http.StatusOK, "ok")
	})
	return r, func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		return slices.Sorted(slices.Values(ran))
	}
}

// TestLeakyBucketSpacesRequests: a real leaky bucket (10/s, a queue of 3) behind the
// middleware, as nginx's limit_req without nodelay. Five requests at once: three are held
// and reach the handler 100 ms apart, two find the queue full and get 429 at once.
func TestLeakyBucketSpacesRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r, ran := shaped(t, ratelimit.Limit{Rate: 10, Burst: 3}, start)
		var mu sync.Mutex
		answered := map[int][]time.Duration{}
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				code := perform(r, http.MethodGet, "/", client).Code
				mu.Lock()
				answered[code] = append(answered[code], time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		ms := time.Millisecond
		assert.Equal(t, []time.Duration{0, 100 * ms, 200 * ms}, ran())
		assert.Equal(t, []time.Duration{0, 0}, answered[http.StatusTooManyRequests])
		assert.Len(t, answered[http.StatusOK], 3)
	})
}

// TestLeakyBucketSmoothsArrivals: requests arriving every 40 ms at a limit of 10/s (T =
// 100 ms, a queue of τ = 300 ms) leave every 100 ms, until the queue is full.
func TestLeakyBucketSmoothsArrivals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r, ran := shaped(t, ratelimit.Limit{Rate: 10, Burst: 3}, start)
		codes := make([]int, 6)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Go(func() { codes[i] = perform(r, http.MethodGet, "/", client).Code })
			time.Sleep(40 * time.Millisecond)
		}
		wg.Wait()
		// Arrival → turn, queue end: 0 → 0, 100; 40 → 100, 200; 80 → 200, 300;
		// 120 → 300, 400 (280 ms ahead, within τ). At 160 ms the queue would end 340 ms
		// ahead: 429. At 200 ms it ends exactly τ ahead: held until 400 ms.
		ms := time.Millisecond
		assert.Equal(t, []int{200, 200, 200, 200, 429, 200}, codes)
		assert.Equal(t, []time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms}, ran())
	})
}

// TestLeakyBucketClientGoesAway: a client that gives up while its request is held gets 503
// and never reaches the handler; its place in the queue stays taken.
func TestLeakyBucketClientGoesAway(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		r, ran := shaped(t, ratelimit.Limit{Rate: 10, Burst: 3}, start)
		assert.Equal(t, http.StatusOK, perform(r, http.MethodGet, "/", client).Code)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
		req.RemoteAddr = client
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		assert.Equal(t, http.StatusServiceUnavailable, w.Code)
		assert.Equal(t, 50*time.Millisecond, time.Since(start))
		// The next request's turn is at 200 ms, after the abandoned one's.
		assert.Equal(t, http.StatusOK, perform(r, http.MethodGet, "/", client).Code)
		assert.Equal(t, []time.Duration{0, 200 * time.Millisecond}, ran())
	})
}
