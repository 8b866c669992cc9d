package ginmw_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
)

// A streamed response is settled once its body has ended: 10 a minute, a request charged 1
// streams 3 chunks of what it reports as 4 tokens each (12 in all, 11 over: the bucket
// is 2 in debt); the next request waits out the debt and one token, 3 tokens, 18 s.
func TestSettleStreamedBody(t *testing.T) {
	l, _ := newLimiter(t)
	r := gin.New()
	r.Use(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(10)), ginmw.WithSettle(func(c *gin.Context) (int, bool) {
		return c.GetInt("tokens"), c.Writer.Written()
	})))
	r.GET("/chat", func(c *gin.Context) {
		chunks := 0
		c.Stream(func(w io.Writer) bool {
			chunks++
			c.Set("tokens", 4*chunks)
			_, _ = w.Write([]byte("tok "))
			return chunks < 3
		})
	})
	srv := httptest.NewServer(r) // a real server: c.Stream needs a connection to watch
	t.Cleanup(srv.Close)
	get := func() (*http.Response, string) {
		resp, err := srv.Client().Get(srv.URL + "/chat")
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(body)
	}
	first, body := get()
	assert.Equal(t, http.StatusOK, first.StatusCode)
	assert.Equal(t, "tok tok tok ", body)
	second, _ := get()
	assert.Equal(t, http.StatusTooManyRequests, second.StatusCode)
	assert.Equal(t, strconv.Itoa(18), second.Header.Get("Retry-After"))
}
