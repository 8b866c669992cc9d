// Package grpcmw rate-limits gRPC calls with any ratelimit.Limiter: in process (package
// local), in Redis (package distributed), or both (package fallback). It has the four
// interceptors of go-grpc-middleware, configured by the same options:
//
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(grpcmw.UnaryServerInterceptor(limiter, opts...)),
//		grpc.ChainStreamInterceptor(grpcmw.StreamServerInterceptor(limiter, opts...)))
//
// ExampleUnaryServerInterceptor runs one.
//
// The default key is the full method name, one bucket per method for all its callers; package
// grpckeys keys calls by peer address, metadata or an authenticated identity, and
// WithMethodLimits gives each method its own limit. The middlewares of packages ginmw, httpmw
// and grpcmw share one pipeline, options and answers:
// https://github.com/sluice-go/ratelimit/blob/main/docs/middleware.md describes them once.
//
// # Denials
//
// A denied call ends with codes.ResourceExhausted, never Unavailable (which clients retry at
// once), with an errdetails.RetryInfo (RetryAfter rounded up to the millisecond; RetryDelay
// reads it), an errdetails.QuotaFailure whose subject is the kind of key, never the key, and
// the grpc-retry-pushback-ms trailer (PushbackKey), which grpc-go clients with a retry policy
// obey. Metadata travels as trailers only, so that clients may retry.
// https://github.com/sluice-go/ratelimit/blob/main/docs/grpc.md has the details and a client
// retry configuration.
//
// # Streams and clients
//
// A stream is checked once, when it opens, before the handler runs; WithPerMessage charges
// each message the handler receives instead (a denied message has been read, and is
// dropped). The client interceptors check a call before it is sent, so a limited call never
// leaves the process; with WithWait it waits for its turn instead.
//
// # Security
//
// The method-name key limits a method as a whole, so one client can use up another's share:
// key by client where that matters. grpckeys.PeerIP reads the connection's peer, never
// metadata such as x-forwarded-for, which clients can forge; a peer without an IP address
// makes it fail, and the call is limited under UnkeyedKey, not let through. Under fail open,
// an attacker who can make the limiter fail escapes the limit: choose WithFailClosed for
// limits that must hold.
package grpcmw
