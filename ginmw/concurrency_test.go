package ginmw_test

import (
	"net/http"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/ginmw"
)

// WithConcurrency beside a rate limit on one route: the handler runs holding the client's
// only permit; a second request meanwhile is answered 503 with Retry-After 1, and the
// permit is back when the first is done.
func TestConcurrency(t *testing.T) {
	l, _ := newLimiter(t)
	conc := local.New(local.WithQueue(-1, local.OldestFirst))
	t.Cleanup(func() { _ = conc.Close() })
	r := gin.New()
	var inner int
	r.GET("/export", ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(10)), ginmw.WithConcurrency(conc, 1)),
		func(c *gin.Context) {
			if c.Query("nested") == "1" { // a second request of the client while this one runs
				inner = perform(r, http.MethodGet, "/export", client).Code
			}
			c.String(http.StatusOK, "ok")
		})
	w := perform(r, http.MethodGet, "/export?nested=1", client)
	assert.Equal(t, http.StatusOK, w.Code)
	assert.Equal(t, http.StatusServiceUnavailable, inner)
	w = perform(r, http.MethodGet, "/export", client)
	assert.Equal(t, http.StatusOK, w.Code, "the permit was released")
}
