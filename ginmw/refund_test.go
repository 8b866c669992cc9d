package ginmw_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ginmw"
)

// A failed login that sends 103 Early Hints before its 401 is not refunded by "refund the
// successful ones" (status below 400): c.Writer.Status() is the 401 once the handler has
// answered, whether the 103 went to the server's writer or only to Gin's, which keeps the
// last status set before the header is written. Seven attempts at once against 5 a minute:
// five 401s, then two 429s.
func TestRefundIfAfterEarlyHints(t *testing.T) {
	earlyHints := map[string]func(c *gin.Context){
		"server's writer": func(c *gin.Context) {
			w := c.Writer.(interface{ Unwrap() http.ResponseWriter }).Unwrap()
			w.Header().Set("Link", "</style.css>; rel=preload; as=style")
			w.WriteHeader(http.StatusEarlyHints)
		},
		"Gin's writer": func(c *gin.Context) { c.Writer.WriteHeader(http.StatusEarlyHints) },
	}
	for name, hints := range earlyHints {
		t.Run(name, func(t *testing.T) {
			l, _ := newLimiter(t)
			statuses := make(chan int, 7)
			r := gin.New()
			r.Use(ginmw.New(l, ginmw.WithLimit(ratelimit.PerMinute(5)), ginmw.WithRefundIf(func(c *gin.Context) bool {
				statuses <- c.Writer.Status()
				return c.Writer.Status() < 400
			})))
			r.POST("/login", func(c *gin.Context) {
				hints(c)
				c.AbortWithStatusJSON(http.StatusUnauthorized, gin.H{"error": "wrong password"})
			})
			srv := httptest.NewServer(r)
			t.Cleanup(srv.Close)

			var codes []int
			for range 7 {
				resp, err := http.Post(srv.URL+"/login", "text/plain", nil)
				require.NoError(t, err)
				require.NoError(t, resp.Body.Close())
				codes = append(codes, resp.StatusCode)
			}
			assert.Equal(t, []int{401, 401, 401, 401, 401, 429, 429}, codes)
			// The middleware calls the refund function before the server ends the response,
			// so the five charged attempts have been told.
			close(statuses)
			var told []int
			for s := range statuses {
				told = append(told, s)
			}
			assert.Equal(t, []int{401, 401, 401, 401, 401}, told)
		})
	}
}
