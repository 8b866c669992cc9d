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
// escaped, digested when long and bounded to 512 bytes as package httpkeys
// describes, so that different labels and values never give the same key. A bucket is
// named by the key and the limit together, so two routes with different limits never share
// a bucket even under the same key; two routes with the same limit do, unless the key
// includes the route.
//
// A Func that cannot find its key returns an error wrapping ratelimit.ErrInvalidArgument, never a
// panic; ginmw then limits the request under one key shared by every such request.
//
// # Security
//
// ClientIP uses the socket peer unless told which proxies to trust, because any client can
// write X-Forwarded-For; WithGinClientIP is for engines configured with SetTrustedProxies
// (gin's c.ClientIP() with default settings trusts everyone: CVE-2020-28483). Values the
// client chooses (Header) should be keys only when something upstream has authenticated them.
// https://github.com/sluice-go/ratelimit/blob/main/docs/client-ip.md covers proxies,
// platforms, IPv6 and hashing personal data.
package keyfuncs
