// Package grpcmw rate-limits gRPC calls with any ratelimit.Limiter: the in-process backend
// (package local) or Redis (package distributed). It has the four interceptors of
// go-grpc-middleware: UnaryServerInterceptor, StreamServerInterceptor,
// UnaryClientInterceptor and StreamClientInterceptor.
//
//	limiter := local.New()
//	defer limiter.Close()
//	opts := []grpcmw.Option{grpcmw.WithLimit(ratelimit.PerSecond(100))}
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(grpcmw.UnaryServerInterceptor(limiter, opts...)),
//		grpc.ChainStreamInterceptor(grpcmw.StreamServerInterceptor(limiter, opts...)))
//
// # Keys and limits
//
// The default key is the full method name, so each method has one bucket for all its
// callers, as in Genesis. Package grpckeys keys calls by peer address, metadata value or a
// value an authentication interceptor stored, and combines them:
//
//	grpcmw.WithKeyFunc(grpckeys.Compose(grpckeys.PeerIP(), grpckeys.FullMethod()))
//
// WithLimit gives every call one limit, WithMethodLimits one per method with a default,
// WithLimitFunc any limit a function computes; the zero Limit leaves a call unlimited.
// A bucket is named by its key and its limit, so two methods with different limits never
// share a bucket even under the same key. WithSkipFunc exempts calls, such as health checks.
//
// # Denials
//
// A denied call ends with codes.ResourceExhausted and the message "rate limit exceeded",
// carrying two details and one trailer:
//
//   - errdetails.RetryInfo, whose RetryDelay is the limiter's RetryAfter rounded up to the
//     millisecond: a client that waits that long is never early. (HTTP's Retry-After is
//     rounded up to whole seconds because that is its unit; RetryInfo is a Duration and
//     keeps the precision, which matters for limits of many calls a second.) RetryDelay
//     reads it back.
//   - errdetails.QuotaFailure, with one violation whose Subject is the kind of key ("rpc",
//     "ip", "x-api-key", "user|rpc", "unkeyed"), never the key itself, and whose
//     Description is the limit ("rate limit 2/min burst 2 exceeded").
//   - The grpc-retry-pushback-ms trailer (PushbackKey), the same delay in milliseconds. A
//     grpc-go client whose retry policy lists RESOURCE_EXHAUSTED waits exactly that long
//     before retrying, instead of its own backoff; when that comes after the call's
//     deadline it makes no further attempt, and the call ends at its deadline. A call whose cost exceeds the limit's Burst can never be allowed: it
//     ends with ResourceExhausted, a QuotaFailure and a pushback of -1, which tells the
//     client not to retry.
//
// The interceptors send metadata only as trailers, never as headers: gRPC clients retry
// only calls answered with trailers alone. WithMetadata adds metadata mirroring the HTTP
// rate-limit headers of package headers. docs/grpc.md has a client retry configuration.
//
// A denial is never codes.Unavailable: clients and proxies retry Unavailable at once, on
// every replica, as a transient failure, which turns a rate limit into a retry storm.
//
// # Streams
//
// By default a stream is checked once, when it opens, before the handler runs: what a
// stream costs a server is mostly its opening (authentication, a handler goroutine, a
// database cursor), a denial there is a clean status the client can retry, and checking
// before the handler runs means a denied stream does no work at all. A stream's later
// messages are not charged, however many there are; bound those with the server's own
// limits (MaxConcurrentStreams, message sizes, keepalive) or with per-message limiting.
//
// WithPerMessage charges each message the handler receives (RecvMsg) instead. Caveats:
// the stream's opening is not charged, so a stream that sends nothing costs nothing; a
// denied message has already been read and is dropped, and RecvMsg returns the
// ResourceExhausted error, which ends the stream when the handler returns it, as handlers
// usually do; by then the stream has usually exchanged headers or messages, so clients do
// not retry it transparently; and the trailer carries the latest decision, sent when the
// handler returns. Messages the server sends are never charged.
//
// # Clients
//
// The client interceptors check a call before it is sent, so a limited call never leaves
// the process. It fails with the same status and details as a server's denial, and a
// grpc.Trailer call option receives the same trailer. gRPC does not retry it: the
// interceptor runs outside the channel's retry logic. With WithWait the call waits for its
// turn instead, which needs a limiter with Wait (package local).
//
// # Errors
//
// When the key function fails, or returns "", the error handler is told (WithErrorHandler;
// by default the error is logged with grpclog) and the call is limited under UnkeyedKey,
// one bucket shared by every such call. When the limiter fails (Redis down, limiter
// closed), the error handler is told and the error policy applies: fail open by default,
// so the call proceeds, or fail closed, codes.Unavailable with "rate limiter unavailable".
// An error handler that returns an error ends the call with it instead, such as
// codes.Unauthenticated for a call without an API key.
//
// # Security
//
// The default key, the method name, limits a method as a whole: one client can use up
// another's share. Key by client where that matters. grpckeys.PeerIP reads the connection's
// peer, which clients cannot forge, and never metadata such as x-forwarded-for, which they
// can; behind a proxy that terminates connections every call has the proxy's address, so
// key by an identity the proxy or your authentication vouches for. A peer with no IP address
// (a Unix socket, bufconn) makes PeerIP fail, and the call is limited under UnkeyedKey, not
// let through.
//
// Keys may be personal data (addresses, user IDs). They are not sent to clients: status
// messages name no key and the QuotaFailure subject is the key's kind. Hash keys before
// they reach a shared Redis with grpckeys.Hashed.
//
// Under fail open, an attacker who can make the limiter fail (by exhausting Redis, say)
// escapes the limit; choose FailClosed where the limit protects something that must not be
// overrun, such as a login method.
package grpcmw
