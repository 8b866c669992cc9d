package keyfuncs

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/keypart"
)

// Header returns a Func that keys a request by the value of the header name, labelled with
// the name in lower case: Header("X-API-Key") gives "x-api-key:abc123". The value is trimmed
// of spaces; a value longer than 128 bytes is replaced by a digest, so a client cannot make
// keys of any length. A missing or blank header is an error. The client chooses this value:
// key by a header only where something upstream has checked it (an API gateway that
// authenticates the key), or a client can spread its requests over as many keys as it
// likes.
func Header(name string) Func {
	label := strings.ToLower(name)
	return func(c *gin.Context) (string, error) {
		v := strings.TrimSpace(c.GetHeader(name))
		if v == "" {
			return "", fmt.Errorf("%w: header %s is missing or blank", ratelimit.ErrKeyEmpty, name)
		}
		return keypart.Label(label, v), nil
	}
}

// ContextValue returns a Func that keys a request by the value an earlier handler stored
// with c.Set(key, value), typically the user ID set by authentication middleware:
// ContextValue("user") gives "user:42". The value may be a string, any integer type, or a
// fmt.Stringer; other types are an error, as are a missing value and an empty string.
func ContextValue(key string) Func {
	return func(c *gin.Context) (string, error) {
		v, ok := c.Get(key)
		if !ok {
			return "", fmt.Errorf("%w: no value for %q in the gin context", ratelimit.ErrKeyEmpty, key)
		}
		s, err := keypart.Value(v)
		if err != nil {
			return "", fmt.Errorf("%w: gin context value %q: %v", ratelimit.ErrKeyEmpty, key, err)
		}
		if s == "" {
			return "", fmt.Errorf("%w: gin context value %q is empty", ratelimit.ErrKeyEmpty, key)
		}
		return keypart.Label(key, s), nil
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

// Method returns a Func that keys a request by its HTTP method: "method:GET". Methods other
// than the eight of RFC 9110 (GET, HEAD, POST, PUT, DELETE, CONNECT, OPTIONS, TRACE) and
// PATCH share "method:OTHER", since a client may send any token as a method. It never
// fails.
func Method() Func {
	return func(c *gin.Context) (string, error) {
		switch m := c.Request.Method; m {
		case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
			http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
			return "method:" + m, nil
		}
		return "method:OTHER", nil
	}
}
