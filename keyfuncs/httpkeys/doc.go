// Package httpkeys provides ready key functions for rate limiting net/http services: the
// client's address, a header, a value set by earlier middleware, the ServeMux pattern, the
// method, and compositions of these. A Func takes the *http.Request. Package keyfuncs
// offers the same functions for Gin (built on these), and keyfuncs/grpckeys for gRPC.
//
// # Keys
//
// Every key is labelled with what it holds ("ip:192.0.2.7", "user:42", "x-api-key:abc",
// "pattern:GET /v1/items/{id}"), and Compose joins keys with "|":
// "user:42|pattern:GET /v1/items/{id}". Different labels and values never give the same key:
// the characters that mark a key's structure (':', '|' and '%' in a label; '|', '%' and '#'
// in a value) are escaped as %XX; a value longer than 128 bytes is replaced by "#sha256:" and its
// digest ("x-api-key:#sha256:…"), a form no value can take once escaped; a hashed key is
// "h:#" and its digest. No key is longer than 512 bytes: a longer one is
// replaced by its SHA-256 digest, as Hashed with no secret would.
//
// A bucket is named by the key and the limit together, so two routes with different limits
// never share a bucket even under the same key; two routes with the same limit do, unless
// the key includes the pattern.
//
// # Errors
//
// A Func that cannot find its key returns an error wrapping ratelimit.ErrInvalidArgument, never a
// panic and never an empty key with a nil error. The middleware of this module limits such
// requests under one key shared by all of them, so that a client cannot escape its limit by
// leaving the key out; a middleware of your own should not let them through unlimited
// either. Errors name what is missing (a header, a
// context value), never a key or an address, which may be personal data.
//
// # Security
//
// ClientIP uses the socket peer unless told which proxies to trust, because any client can
// write X-Forwarded-For, X-Real-IP or CF-Connecting-IP. WithTrustedProxies and
// WithPlatformHeader trust these headers only from the addresses you name. IPv6 clients are
// grouped by /64 by default, since one host commonly holds a whole /64; IPv4 clients behind a
// NAT64 translator are keyed by their IPv4 address. Values the client chooses (Header) should
// be keys only when something upstream has authenticated them. Keys can be personal data;
// Hashed replaces a key by an HMAC of it.
// https://github.com/sluice-go/ratelimit/blob/main/docs/client-ip.md covers proxies,
// platforms, IPv6 and privacy in depth.
package httpkeys
