// Package ginmw rate-limits Gin requests with any ratelimit.Limiter: in process (package
// local), in Redis (package distributed), or both (package fallback).
//
//	r.Use(ginmw.New(limiter, ginmw.WithLimit(ratelimit.PerSecond(20))))
//
// ExampleNew runs it.
//
// New returns a gin.HandlerFunc, so it goes on the engine, on a group or on one route, each
// with its own limit; WithRouteLimits gives each route pattern its own. Every limit belongs
// to a policy, whose name starts its buckets' keys: WithPolicyName's ("default" unless
// given), or, with WithRouteLimits, the route's pattern, so that two routes never share a
// bucket; two middlewares share buckets only where they share a policy name, a key and a
// limit.
//
// An allowed request proceeds with rate-limit headers (WithHeaderStyle); a denied one gets
// a 429 with Retry-After and {"error":"rate limit exceeded","retry_after":N}
// (WithDeniedHandler) and the chain is aborted. When the limiter fails, the error handler
// is told (by default with c.Error, for gin.Logger) and the error policy applies. The
// middlewares of packages ginmw, httpmw and grpcmw share one pipeline, options and answers:
// https://github.com/sluice-go/ratelimit/blob/main/docs/middleware.md describes them once.
//
// # Security
//
// The default key is the socket peer's address (keyfuncs.ClientIP), which no client can forge;
// behind a reverse proxy every request shares the proxy's key until you name it with
// keyfuncs.WithTrustedProxies
// (https://github.com/sluice-go/ratelimit/blob/main/docs/client-ip.md). A request whose key
// cannot be found is limited under UnkeyedKey, not let through; an error handler may refuse it
// instead, with a 401 for instance. Under fail open, an attacker who can make the limiter fail
// escapes the limit: choose WithFailClosed for limits that must hold, such as on a login
// route.
package ginmw
