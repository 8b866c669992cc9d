// Package keyfuncs provides ready key functions for the Gin middleware
// (github.com/sluice-go/ratelimit/ginmw): the client's address, a header, a value set by
// earlier middleware, the route template, the method, and compositions of these. Those that
// need only the *http.Request are built on package keyfuncs/httpkeys, the net/http
// counterparts; the gRPC ones live in keyfuncs/grpckeys, so that a gRPC service does not
// compile gin and a Gin service does not compile gRPC.
//
// # Keys
//
// Every key is labelled with what it holds ("ip:192.0.2.7", "user:42", "route:/v1/x",
// "x-api-key:abc"), and Compose joins keys with "|": "user:42|route:/v1/x". Keys are
// escaped, digested when long and bounded by ratelimit.MaxKeyLen as package httpkeys
// describes, so that different labels and values never give the same key. A bucket is
// named by the key and the limit together, so two routes with different limits never share
// a bucket even under the same key; two routes with the same limit do, unless the key
// includes the route.
//
// # Errors
//
// A Func that cannot find its key returns an error wrapping ratelimit.ErrKeyEmpty, never a
// panic and never an empty key with a nil error. ginmw then reports the error and limits the
// request under a single key shared by every request that could not be keyed, so that a
// client cannot escape its limit by leaving the key out.
//
// # Security
//
// ClientIP uses the socket peer unless told which proxies to trust, because any client can
// write X-Forwarded-For, X-Real-IP or CF-Connecting-IP. Trusting them from everyone (gin's
// own c.ClientIP() with the engine's default settings, CVE-2020-28483) lets one client rotate
// through unlimited keys. WithTrustedProxies and WithPlatformHeader trust these headers only
// from the addresses you name; WithGinClientIP is for engines configured with
// SetTrustedProxies. IPv6 clients are grouped by /64 by default, since one host commonly
// holds a whole /64. Values the client chooses (Header) should be keys only when something
// upstream has authenticated them.
//
// Keys can be personal data (addresses, user IDs) and are stored by the limiter, in Redis
// for the distributed backend. Hashed replaces a key by an HMAC of it. docs/client-ip.md
// covers proxies, platforms, IPv6 and privacy in more depth.
package keyfuncs
