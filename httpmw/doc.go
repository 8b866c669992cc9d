// Package httpmw rate-limits net/http requests with any ratelimit.Limiter, for the standard
// library's ServeMux and every router built on http.Handler (chi, gorilla/mux, echo through
// its adapter). It is the twin of package ginmw: the same options, with the same meaning,
// over *http.Request.
//
//	limit := httpmw.New(limiter, httpmw.WithLimit(ratelimit.PerSecond(20)))
//	http.ListenAndServe(":8080", limit(mux))
//
// ExampleNew runs it.
//
// # Where to put it
//
// New returns a func(http.Handler) http.Handler, so it wraps a whole mux or one handler.
// Every limit belongs to a policy, whose name starts its buckets' keys: WithPolicyName's
// ("default" unless given), or, with WithRouteLimits, the route's pattern, so that two
// routes never share a bucket; two middlewares share buckets only where they share a policy
// name, a key and a limit. WithRouteLimits reads the pattern http.ServeMux routed a request
// by, or, when the middleware wraps the *http.ServeMux itself, the one it will route it by;
// other routers hand theirs over with WithRouteFunc (chi: see examples/chi).
//
// # Responses
//
// An allowed request proceeds with rate-limit headers (WithHeaderStyle). A denied one gets
// the same headers, Retry-After in whole seconds rounded up, and a 429 with
// {"error":"rate limit exceeded","retry_after":N} (WithDeniedHandler); the next handler does
// not run. Other answers:
//
//   - The limiter fails (Redis down, limiter closed): the error handler is told
//     (WithErrorHandler) and the request proceeds without rate-limit headers (fail
//     open, the default), or gets a 503 with {"error":"rate limiter unavailable"}
//     (WithFailClosed).
//   - A cost above the limit's Burst can never be allowed: 429, failing open or closed.
//   - A cost below 1 or a limit the backend rejects is a mistake in the program: 500 with
//     {"error":"rate limit misconfigured"} failing open or closed, since failing open would let
//     such requests bypass the limit. (Exempt requests with WithSkipFunc or the zero Limit
//     instead.) New panics at once on a fixed limit the backend rejects.
//   - A request whose own context ends first (the client left, a server timeout) is ended
//     with a 503 and no body, and its handler does not run.
//
// # Security
//
// The default key is the socket peer's address, which no client can forge; behind a reverse
// proxy every request then shares the proxy's key until you name the proxy with
// httpkeys.WithTrustedProxies (see
// https://github.com/sluice-go/ratelimit/blob/main/docs/client-ip.md). A request whose key
// cannot be found is not let through unlimited: the error handler is told and the request is
// limited under UnkeyedKey, one bucket shared by every such request.
//
// Under fail open, an attacker who can make the limiter fail escapes the limit; choose
// WithFailClosed where the limit protects something that must not be overrun, such as
// a login endpoint.
package httpmw
