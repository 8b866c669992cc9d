// Package grpckeys provides ready key functions for gRPC rate limiting: the peer's address,
// a metadata value, the full method name, and compositions of these. They have the
// signature of the gRPC middleware's key functions, func(ctx, fullMethod) (string, error),
// and make keys of the same form as their counterparts in packages keyfuncs (Gin) and
// keyfuncs/httpkeys (net/http), which describes it ("ip:192.0.2.7", "x-api-key:abc",
// "user:42|rpc:/pkg.Svc/Get").
//
// It is a package of its own so that a gRPC service does not compile gin, nor a Gin service
// gRPC; the address handling is shared with keyfuncs and keyfuncs/httpkeys.
//
// A Func that cannot find its key (a peer without an IP address, such as a Unix socket or
// bufconn; missing metadata) returns an error wrapping ratelimit.ErrInvalidArgument, which names
// the peer's network ("unix"), never its address.
//
// # Security
//
// PeerIP is the address of the connection's other end. gRPC has no standard for client
// addresses forwarded by proxies, and metadata such as x-forwarded-for is written by the
// client unless a proxy you trust overwrites it, so PeerIP never reads metadata. Behind a
// proxy that terminates connections, key by an authenticated identity instead (Metadata
// set by the proxy, or a value your auth interceptor stores). IPv6 peers are grouped by /64
// by default; IPv4 peers behind a NAT64 translator are keyed by their IPv4 address. Hash
// personal data with Hashed.
package grpckeys
