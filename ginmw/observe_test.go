package ginmw_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
	"github.com/sluice-go/ratelimit/observe"
)

// outcomes is an Observer that keeps each decision's policy and outcome.
type outcomes struct {
	mu   sync.Mutex
	seen []string
}

func (o *outcomes) ObserveDecision(_ context.Context, d observe.Decision) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.seen = append(o.seen, d.Policy+":"+d.Outcome.String())
}

// A limiter observed by observe.Wrap keeps what the local limiter can do: the middleware
// takes it with WithLimits and WithRefundIf, and the decorator reports each limit of each
// decision. Per client 2 a minute, 100 overall, on a clock that does not move: two
// requests refunded, two kept, the fifth denied by the client's limit and so counted
// denied by both.
func TestObservedLimiterWithLimitsAndRefund(t *testing.T) {
	l, _ := newLimiter(t)
	obs := &outcomes{}
	var mw gin.HandlerFunc
	require.NotPanics(t, func() {
		mw = ginmw.New(observe.Wrap(l, obs, "x"),
			ginmw.WithLimits(func(c *gin.Context) []ratelimit.Request {
				return []ratelimit.Request{
					{Key: "ip:" + c.ClientIP(), Limit: ratelimit.PerMinute(2), Name: "client"},
					{Key: "all", Limit: ratelimit.PerMinute(100)},
				}
			}),
			ginmw.WithRefundIf(func(c *gin.Context) bool { return c.Query("refund") == "1" }))
	})
	r := newRouter(mw)
	var got []int
	for _, path := range []string{"/v1/items/1?refund=1", "/v1/items/1?refund=1", "/v1/items/1", "/v1/items/1", "/v1/items/1"} {
		got = append(got, perform(r, http.MethodGet, path, client).Code)
	}
	assert.Equal(t, []int{200, 200, 200, 200, 429}, got)
	// The middleware names every limit it asks for: the unnamed one is its default policy's.
	allowed := []string{"client:allowed", "default:allowed"}
	var want []string
	for range 4 {
		want = append(want, allowed...)
	}
	want = append(want, "client:denied", "default:denied")
	assert.Equal(t, want, obs.seen)
}

// hidden hides every optional interface of the limiter it holds.
type hidden struct{ ratelimit.Limiter }

// observe.Wrap invents no capability: a limiter that cannot refund, observed, still cannot,
// and the middleware says so at construction.
func TestObservedLimiterCannotRefund(t *testing.T) {
	l, _ := newLimiter(t)
	w := observe.Wrap(hidden{l}, &outcomes{}, "x")
	_, ok := ratelimit.As[ratelimit.Inspector](w)
	require.False(t, ok)
	assert.Panics(t, func() {
		ginmw.New(w, ginmw.WithLimit(ratelimit.PerMinute(2)), ginmw.WithRefundIf(func(*gin.Context) bool { return true }))
	})
	assert.Panics(t, func() {
		ginmw.New(w, ginmw.WithLimits(func(*gin.Context) []ratelimit.Request { return nil }))
	})
}
