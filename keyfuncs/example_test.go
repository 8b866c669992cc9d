package keyfuncs_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit/keyfuncs"
)

// Behind a load balancer in 10.0.0.0/8, the client is the address it appended to
// X-Forwarded-For; whatever the client wrote to the left of it is ignored.
func ExampleClientIP() {
	key := keyfuncs.ClientIP(keyfuncs.WithTrustedProxies(netip.MustParsePrefix("10.0.0.0/8")))
	for _, remote := range []string{"10.0.0.2:443", "203.0.113.9:5000"} {
		c, _ := gin.CreateTestContext(httptest.NewRecorder())
		c.Request = httptest.NewRequest(http.MethodGet, "/", nil)
		c.Request.RemoteAddr = remote
		c.Request.Header.Set("X-Forwarded-For", "6.6.6.6, 198.51.100.7")
		fmt.Println(key(c))
	}
	// Output:
	// ip:198.51.100.7 <nil>
	// ip:203.0.113.9 <nil>
}

// A per-user, per-route key; the user ID is set by authentication middleware that runs first.
func ExampleCompose() {
	key := keyfuncs.Compose(keyfuncs.ContextValue("user"), keyfuncs.Route())
	r := gin.New()
	r.GET("/v1/items/:id",
		func(c *gin.Context) { c.Set("user", 42) },
		func(c *gin.Context) { k, _ := key(c); fmt.Println(k) })
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/v1/items/7", nil))
	// Output: user:42|route:/v1/items/:id
}
