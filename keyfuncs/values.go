package keyfuncs

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit/internal/keypart"
	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
)

// Header returns a Func that keys a request by the value of the header name, labelled with
// the name in lower case: Header("X-API-Key") gives "x-api-key:abc123". It is
// [httpkeys.Header], which says how long values are digested. The client chooses this
// value: key by a header only where something upstream has checked it.
func Header(name string) Func {
	return onRequest(httpkeys.Header(name))
}

// ContextValue returns a Func that keys a request by the value an earlier handler stored
// with c.Set(key, value), typically the user ID set by authentication middleware:
// ContextValue("user") gives "user:42". The value may be a string, any integer type, or a
// fmt.Stringer; other types are an error, as are a missing value and an empty string.
func ContextValue(key string) Func {
	what := fmt.Sprintf("gin context value %q", key)
	return func(c *gin.Context) (string, error) {
		v, _ := c.Get(key)
		return keypart.ContextValue(key, v, what)
	}
}

// Unmatched is the route Route reports for a request that matched no route (a 404 or 405).
const Unmatched = "(unmatched)"

// Route returns a Func that keys a request by its route template, c.FullPath():
// "route:/v1/items/:id". It never uses the request path, which the client chooses, so a
// client cannot create a key per URL; requests that matched no route share
// "route:(unmatched)". It never fails. Compose it with a client key for a per-client,
// per-route limit.
func Route() Func {
	return func(c *gin.Context) (string, error) {
		p := c.FullPath()
		if p == "" {
			p = Unmatched
		}
		return keypart.Label("route", p), nil
	}
}

// Method returns a Func that keys a request by its HTTP method, as [httpkeys.Method] does:
// "method:GET", and "method:OTHER" for methods outside RFC 9110 and PATCH. It never fails.
func Method() Func {
	return onRequest(httpkeys.Method())
}
