package keyfuncs

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/clientip"
	"github.com/sluice-go/ratelimit/internal/keypart"
)

// Func returns the rate-limit key of a Gin request. An error, which wraps
// ratelimit.ErrKeyEmpty, means the request has no key of this kind; see the package
// documentation for what the middleware then does. A Func is a valid argument of
// ginmw.WithKeyFunc.
type Func func(c *gin.Context) (string, error)

// ClientIP returns a Func that keys a request by its client's address: "ip:192.0.2.7", or
// "ip:2001:db8:1:2::/64" for an IPv6 client (grouped by /64 unless WithIPv6Prefix says
// otherwise).
//
// By default the client is the socket peer (Request.RemoteAddr) and request headers are
// never read, so no client can choose its key. Behind proxies, name them with
// WithTrustedProxies; behind a platform that sets a client-address header, use
// WithPlatformHeader. The Func fails only when the peer is not an IP address (a Unix
// socket, say). It panics at construction if an option is out of range.
func ClientIP(opts ...IPOption) Func {
	o := defaultIPOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if err := o.validate(); err != nil {
		panic(err.Error())
	}
	return func(c *gin.Context) (string, error) {
		if o.gin {
			s := c.ClientIP()
			a, ok := clientip.ParseAddr(s)
			if !ok {
				return "", fmt.Errorf("%w: gin's ClientIP %q is not an IP address", ratelimit.ErrKeyEmpty, s)
			}
			return clientip.Key(a, o.v4Bits, o.v6Bits), nil
		}
		peer, ok := clientip.ParseAddr(c.Request.RemoteAddr)
		if !ok {
			return "", fmt.Errorf("%w: remote address %q is not an IP address", ratelimit.ErrKeyEmpty, c.Request.RemoteAddr)
		}
		client := clientip.Forwarded(peer, c.Request.Header.Values("X-Forwarded-For"), o.trusted)
		for _, p := range o.platforms {
			if !p.from.Contains(client) {
				continue
			}
			if a, ok := clientip.ParseAddr(c.Request.Header.Get(p.header)); ok {
				client = a
				break
			}
		}
		return clientip.Key(client, o.v4Bits, o.v6Bits), nil
	}
}

// Compose returns a Func that joins the keys of fs with "|", in order:
// Compose(ContextValue("user"), Route()) gives "user:42|route:/v1/items/:id". A "|" inside
// a part is escaped (as "%7C", and "%" as "%25") so that different parts never join to the
// same key. It fails when any part fails. It panics if fs is empty or holds nil.
func Compose(fs ...Func) Func {
	if len(fs) == 0 {
		panic("keyfuncs: Compose needs at least one Func")
	}
	for i, f := range fs {
		if f == nil {
			panic(fmt.Sprintf("keyfuncs: Compose: Func %d is nil", i))
		}
	}
	return func(c *gin.Context) (string, error) {
		parts := make([]string, len(fs))
		for i, f := range fs {
			p, err := f(c)
			if err != nil {
				return "", err
			}
			parts[i] = p
		}
		return keypart.Join(parts), nil
	}
}

// Hashed returns a Func that replaces the key of f by "h:#" and 22 characters of
// HMAC-SHA256(secret, key), so that client addresses and user IDs, which are personal data
// in many jurisdictions, are not stored in the limiter (or in Redis) as they are. Keep
// secret out of the code and the same on every instance that shares a Redis backend. With
// an empty secret a plain SHA-256 is used, which hides nothing from someone who can list
// candidate values: there are only 2^32 IPv4 addresses. It panics if f is nil.
func Hashed(secret []byte, f Func) Func {
	if f == nil {
		panic("keyfuncs: Hashed: nil Func")
	}
	secret = append([]byte(nil), secret...)
	return func(c *gin.Context) (string, error) {
		key, err := f(c)
		if err != nil {
			return "", err
		}
		return keypart.Hash(secret, key), nil
	}
}
