package ginmw_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
)

// One middleware over one local limiter (a token bucket by default) serves policies of two
// algorithms, each limit carrying its own: /login a sliding log of 2 a second, the items a
// token bucket of 2 a second. Both admit two at once and deny the third; 500 ms later the
// token bucket has refilled one, where the sliding log holds both entries until its window
// of 1 s has passed.
func TestRouteLimitsOfDifferentAlgorithms(t *testing.T) {
	l, clock := newLimiter(t)
	login := ratelimit.Limit{Rate: 2, Burst: 2, Algorithm: ratelimit.SlidingWindowLog}
	items := ratelimit.Limit{Rate: 2, Burst: 2} // the limiter's default, the token bucket
	r := newRouter(ginmw.New(l, ginmw.WithRouteLimits(map[string]ratelimit.Limit{
		"/login":        login,
		"/v1/items/:id": items,
	}, ratelimit.Limit{})))
	status := func(method, path string) int { return perform(r, method, path, client).Code }

	for range 2 {
		assert.Equal(t, http.StatusOK, status(http.MethodPost, "/login"))
		assert.Equal(t, http.StatusOK, status(http.MethodGet, "/v1/items/1"))
	}
	assert.Equal(t, http.StatusTooManyRequests, status(http.MethodPost, "/login"))
	assert.Equal(t, http.StatusTooManyRequests, status(http.MethodGet, "/v1/items/1"))

	clock.Advance(500 * time.Millisecond)
	assert.Equal(t, http.StatusOK, status(http.MethodGet, "/v1/items/1"), "the token bucket refilled one")
	assert.Equal(t, http.StatusTooManyRequests, status(http.MethodPost, "/login"), "the sliding log's window still holds two")

	clock.Advance(500 * time.Millisecond)
	assert.Equal(t, http.StatusOK, status(http.MethodPost, "/login"), "both entries have left the window")
}
