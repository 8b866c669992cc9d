package httpkeys

import (
	"net/http"

	"github.com/sluice-go/ratelimit/internal/clientip"
	"github.com/sluice-go/ratelimit/internal/keypart"
)

// Func returns the rate-limit key of an HTTP request. An error, which wraps
// ratelimit.ErrInvalidArgument, means the request has no key of this kind. A Func's keys are
// never longer than 512 bytes.
type Func func(r *http.Request) (string, error)

// ClientIP returns a Func that keys a request by its client's address: "ip:192.0.2.7", or
// "ip:2001:db8:1:2::/64" for an IPv6 client (grouped by /64 unless WithIPv6Prefix says
// otherwise).
//
// By default the client is the socket peer (Request.RemoteAddr) and request headers are
// never read, so no client can choose its key. Behind proxies, name them with
// WithTrustedProxies; behind a platform that sets a client-address header, use
// WithPlatformHeader. The Func fails only when RemoteAddr is not an IP address (a Unix
// socket, say). ClientIP panics if an option is out of range.
func ClientIP(opts ...IPOption) Func {
	o := ipOptions{clientip.DefaultOptions()}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := o.Validate("httpkeys"); err != nil {
		panic(err.Error())
	}
	return func(r *http.Request) (string, error) { return o.RequestKey(r) }
}

// Compose returns a Func that joins the keys of fs with "|", in order:
// Compose(ContextValue("user", userKey{}), Pattern()) gives
// "user:42|pattern:GET /v1/items/{id}". A "|" inside a part is escaped (as "%7C", and "%"
// as "%25") so that different parts never join to the same key, and a joined key longer
// than 512 bytes is replaced by its SHA-256 digest ("h:#" and 22 characters). It
// fails when any part fails. It panics if fs is empty or holds nil.
func Compose(fs ...Func) Func {
	return keypart.Compose("httpkeys", fs)
}

// Hashed returns a Func that replaces the key of f by "h:#" and 22 characters of
// HMAC-SHA256(secret, key), so that client addresses and user IDs, which are personal data
// in many jurisdictions, are not stored in the limiter (or in Redis) as they are. Keep
// secret out of the code and the same on every instance that shares a Redis backend. With
// an empty secret a plain SHA-256 is used, which hides nothing from someone who can list
// candidate values: there are only 2^32 IPv4 addresses. The same key and secret give the
// same result in keyfuncs, httpkeys and grpckeys. It panics if f is nil.
func Hashed(secret []byte, f Func) Func {
	return keypart.Hashed("httpkeys", secret, f)
}
