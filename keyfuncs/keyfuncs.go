package keyfuncs

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/clientip"
	"github.com/sluice-go/ratelimit/internal/keypart"
	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
)

// Func returns the rate-limit key of a Gin request. An error, which wraps
// ratelimit.ErrInvalidArgument, means the request has no key of this kind; see the package
// documentation for what the middleware then does. A Func is a valid argument of
// ginmw.WithKeyFunc.
type Func func(c *gin.Context) (string, error)

// onRequest returns f as a Func: the functions that need only the *http.Request are
// httpkeys', so that both packages make the same keys and the same errors.
func onRequest(f httpkeys.Func) Func {
	return func(c *gin.Context) (string, error) { return f(c.Request) }
}

// ClientIP returns a Func that keys a request by its client's address, as
// [httpkeys.ClientIP] does: "ip:192.0.2.7", or "ip:2001:db8:1:2::/64" for an IPv6 client.
// By default the client is the socket peer and request headers are never read; behind
// proxies or a platform, see WithTrustedProxies and WithPlatformHeader, or WithGinClientIP
// for an engine configured to find it. The Func fails only when the peer is not an IP
// address (a Unix socket, say). ClientIP panics if an option is out of range.
func ClientIP(opts ...IPOption) Func {
	o := ipOptions{Options: clientip.DefaultOptions()}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := o.Validate("keyfuncs"); err != nil {
		panic(err.Error())
	}
	if !o.gin {
		return func(c *gin.Context) (string, error) { return o.RequestKey(c.Request) }
	}
	return func(c *gin.Context) (string, error) {
		// gin may return a platform header as the client sent it: not repeated in the error.
		a, ok := clientip.ParseAddr(c.ClientIP())
		if !ok {
			return "", fmt.Errorf("%w: gin's ClientIP is not an IP address", args.ErrKeyEmpty)
		}
		return o.Key(a), nil
	}
}

// Compose returns a Func that joins the keys of fs with "|", in order:
// Compose(ContextValue("user"), Route()) gives "user:42|route:/v1/items/:id". Parts are
// escaped and long keys digested as [httpkeys.Compose] describes. It fails when any part
// fails. It panics if fs is empty or holds nil.
func Compose(fs ...Func) Func {
	return keypart.Compose("keyfuncs", fs)
}

// Hashed returns a Func that replaces the key of f by "h:#" and 22 characters of
// HMAC-SHA256(secret, key), so that client addresses and user IDs are not stored in the
// limiter (or in Redis) as they are; see [httpkeys.Hashed] for the choice of secret. It
// panics if f is nil.
func Hashed(secret []byte, f Func) Func {
	return keypart.Hashed("keyfuncs", secret, f)
}
