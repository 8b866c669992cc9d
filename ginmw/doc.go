// Package ginmw rate-limits Gin requests with any ratelimit.Limiter: the in-process
// backend (package local) or Redis (package distributed).
//
//	limiter := local.New()
//	defer limiter.Close()
//	r := gin.New()
//	r.Use(ginmw.New(limiter, ginmw.WithLimit(ratelimit.PerSecond(20))))
//
// # Where to put it
//
// New returns a gin.HandlerFunc, so it goes wherever Gin takes middleware: on the engine for
// every route, on a group, or on one route, each with its own limit:
//
//	r.POST("/login", ginmw.New(limiter, ginmw.WithLimit(ratelimit.PerMinute(5))), login)
//	api := r.Group("/api", ginmw.New(limiter, ginmw.WithLimit(ratelimit.PerMinute(600))))
//
// A bucket is named by its key and its limit, so the two middlewares above never share a
// bucket even though both key by client address. WithLimitFunc chooses the limit per
// request; returning the zero Limit leaves a request unlimited.
//
// # Responses
//
// An allowed request proceeds with rate-limit headers (X-RateLimit-Limit, -Remaining and
// -Reset by default; see WithHeaderStyle and package headers). A denied request gets the
// same headers plus Retry-After, in whole seconds rounded up, and, by default, a 429 with
// {"error":"rate limit exceeded","retry_after":N}; WithDeniedHandler replaces the answer.
//
// # Errors
//
// When the limiter cannot decide (Redis down, limiter closed), the error handler is told
// (WithErrorHandler; by default the error is attached with c.Error for gin.Logger) and the
// error policy applies: fail open by default, so the request proceeds without rate-limit
// headers, or fail closed, a 503 with {"error":"rate limiter unavailable"}. A cost above the
// limit's Burst can never be allowed and is answered 429 under either policy.
//
// # Security
//
// The default key is the socket peer's address (keyfuncs.ClientIP), which no client can
// forge; behind a reverse proxy every request then shares the proxy's key until you name the
// proxy with keyfuncs.WithTrustedProxies. See docs/client-ip.md.
//
// A request whose key cannot be found (the key function fails, as keyfuncs.Header does when
// the header is missing, or returns "") is not let through unlimited: the error handler is
// told, and the request is limited under UnkeyedKey, one bucket shared by every such
// request. An error handler that would rather refuse such requests can abort them, with a
// 401 for instance.
//
// Under fail open, an attacker who can make the limiter fail (by exhausting Redis, say)
// escapes the limit; choose FailClosed where the limit protects something that must not be
// overrun, such as a login endpoint.
package ginmw
