package ginmw

import (
	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/keyfuncs"
)

// Option configures the middleware built by New.
type Option func(*options)

type options struct {
	key        func(*gin.Context) (string, error)
	limit      func(*gin.Context) ratelimit.Limit
	fixed      *ratelimit.Limit // set by WithLimit, checked by New
	cost       func(*gin.Context) int
	skip       func(*gin.Context) bool
	denied     func(*gin.Context, ratelimit.Result)
	onError    func(*gin.Context, error)
	policy     ratelimit.ErrorPolicy
	style      headers.Style
	policyName string
}

func defaultOptions() options {
	return options{
		key:        keyfuncs.ClientIP(),
		denied:     DeniedJSON,
		onError:    reportError,
		policy:     ratelimit.FailOpen,
		style:      headers.StyleXRateLimit,
		policyName: headers.DefaultPolicyName,
	}
}

// WithKeyFunc sets how a request's key is found. Default: keyfuncs.ClientIP() with no
// trusted proxies, the socket peer's address (IPv6 grouped by /64); behind a proxy, pass
// keyfuncs.ClientIP(keyfuncs.WithTrustedProxies(...)). A key function that fails, or
// returns an empty key, does not let the request through unlimited: see the package
// documentation. Any function of this signature fits, including a keyfuncs.Func. nil means
// the default.
func WithKeyFunc(f func(c *gin.Context) (string, error)) Option {
	return func(o *options) {
		if f == nil {
			f = keyfuncs.ClientIP()
		}
		o.key = f
	}
}

// WithLimit sets the limit of every request. Default: none; New panics unless WithLimit or
// WithLimitFunc gives one. The zero Limit turns limiting off; any other limit must be valid
// (New panics otherwise). Of WithLimit and WithLimitFunc, the last one given applies.
func WithLimit(l ratelimit.Limit) Option {
	return func(o *options) {
		o.fixed = &l
		o.limit = func(*gin.Context) ratelimit.Limit { return l }
	}
}

// WithLimitFunc sets a function that returns each request's limit, for limits that depend
// on the route, the user's plan, and so on. Default: none; New panics unless WithLimit or
// WithLimitFunc gives one. A request for which f returns the zero Limit is not limited. An
// invalid limit is the limiter's error (ratelimit.ErrInvalidLimit), handled by the error
// policy. Of WithLimit and WithLimitFunc, the last one given applies; a nil f is ignored.
func WithLimitFunc(f func(c *gin.Context) ratelimit.Limit) Option {
	return func(o *options) {
		if f != nil {
			o.fixed = nil
			o.limit = f
		}
	}
}

// WithCostFunc sets how many tokens a request takes (ratelimit.Limiter.AllowN), for requests
// that cost more than others: a batch of n items, an export. Default: 1 for every request.
// A cost below 1 is the limiter's error (ratelimit.ErrInvalidCost), handled by the error
// policy; a cost above the limit's Burst can never be allowed and is answered 429 whatever
// the policy. nil means the default.
func WithCostFunc(f func(c *gin.Context) int) Option {
	return func(o *options) { o.cost = f }
}

// WithSkipFunc sets a function that exempts requests from limiting: when it returns true
// the limiter is not asked and no rate-limit header is sent. Default: nothing is skipped.
// Health checks and requests from internal networks are typical. nil means the default.
func WithSkipFunc(f func(c *gin.Context) bool) Option {
	return func(o *options) { o.skip = f }
}

// WithDeniedHandler sets what answers a denied request. It runs after the rate-limit
// headers and Retry-After are set, receives the decision, and should write the response;
// the middleware aborts the chain afterwards whether or not it did. Default: DeniedJSON,
// a 429 with {"error":"rate limit exceeded","retry_after":N}. nil means the default.
func WithDeniedHandler(f func(c *gin.Context, res ratelimit.Result)) Option {
	return func(o *options) {
		if f == nil {
			f = DeniedJSON
		}
		o.denied = f
	}
}

// WithErrorHandler sets what is told about errors: a key function's failure and the
// limiter's errors. It runs before the error policy applies, and may answer the request
// itself by aborting it (c.AbortWithStatusJSON, say), in which case the middleware does
// nothing more. Default: the error is attached to the request with c.Error, where
// gin.Logger and other error-reporting middleware find it. nil means the default.
func WithErrorHandler(f func(c *gin.Context, err error)) Option {
	return func(o *options) {
		if f == nil {
			f = reportError
		}
		o.onError = f
	}
}

// WithErrorPolicy sets what happens to a request when the limiter fails (Redis unreachable,
// limiter closed). Default: ratelimit.FailOpen, the request proceeds. With
// ratelimit.FailClosed it is answered 503 with {"error":"rate limiter unavailable"}.
func WithErrorPolicy(p ratelimit.ErrorPolicy) Option {
	return func(o *options) { o.policy = p }
}

// WithHeaderStyle sets which rate-limit headers responses carry; see package headers.
// Default: headers.StyleXRateLimit (X-RateLimit-Limit, -Remaining, -Reset). Denials carry
// Retry-After whatever the style.
func WithHeaderStyle(s headers.Style) Option {
	return func(o *options) { o.style = s }
}

// WithPolicyName sets the policy name in the IETF RateLimit-Policy and RateLimit headers.
// Default: headers.DefaultPolicyName, "default". Give each middleware with its own limit its
// own name ("login", "api") so that clients can tell the policies apart.
func WithPolicyName(name string) Option {
	return func(o *options) { o.policyName = name }
}
