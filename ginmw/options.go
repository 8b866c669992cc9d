package ginmw

import (
	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/internal/pipeline"
	"github.com/sluice-go/ratelimit/keyfuncs"
	"github.com/sluice-go/ratelimit/observe"
)

// Option configures the middleware built by New. A nil Option is skipped, and a nil
// function given to an option means that option's default.
type Option func(*options)

type options struct {
	pipeline.Options[*gin.Context]
	denied  func(*gin.Context, ratelimit.Result)
	onError func(*gin.Context, error)
}

func defaultOptions() options {
	return options{
		Options: pipeline.Defaults[*gin.Context](keyfuncs.ClientIP()),
		denied:  DeniedJSON,
		onError: reportError,
	}
}

// WithKeyFunc sets how a request's key is found. Default: keyfuncs.ClientIP(), the socket
// peer's address; behind a proxy, pass keyfuncs.ClientIP(keyfuncs.WithTrustedProxies(...)).
// A request whose key cannot be found is limited under UnkeyedKey (see "Security" in the
// package documentation).
func WithKeyFunc(f func(c *gin.Context) (string, error)) Option {
	return func(o *options) { o.SetKey("WithKeyFunc", f, keyfuncs.ClientIP()) }
}

// WithLimit sets the limit of every request. Default: none: New panics unless one of
// WithLimit, WithRouteLimits, WithLimitFunc and WithLimits gives the limits, and when two of
// them are given. l must be a valid limit: the zero Limit (PerMinute(0), a setting left
// unset) is refused too, since it would leave every request unlimited; exempt requests with
// WithSkipFunc instead.
func WithLimit(l ratelimit.Limit) Option {
	return func(o *options) { o.SetLimit(l) }
}

// WithRouteLimits sets a limit per route: limits maps route patterns, as Gin's FullPath
// gives them ("/v1/items/:id"), to their limits, and other routes (and requests that match
// no route) get def. An entry of the zero Limit is refused, as by WithLimit; def may be the zero Limit, which leaves the other routes unlimited. The map is
// copied. See WithLimit for the default.
func WithRouteLimits(limits map[string]ratelimit.Limit, def ratelimit.Limit) Option {
	return func(o *options) {
		o.SetTable("WithRouteLimits", limits, def, (*gin.Context).FullPath)
	}
}

// WithLimits gives each request several limits, decided all or nothing: f returns them,
// each with its key, limit, cost and name ("5 a minute and 20 an hour per client"). Every
// bucket is charged or none is; headers report the binding limit, and RateLimit-Policy
// lists every limit by name. Each request's keys and costs come with its limits:
// New panics when WithKeyFunc, WithCostFunc or another limit option is given too, and when
// the limiter does not implement ratelimit.MultiLimiter. A nil f is ignored.
// See docs/limits.md.
func WithLimits(f func(c *gin.Context) []ratelimit.Request) Option {
	return func(o *options) { o.SetLimits(f) }
}

// WithRefundIf gives a request's tokens back after the handler ran, when f says so: count
// only failed logins (c.Writer.Status() == 401), only server errors. It needs a limiter
// that implements ratelimit.Inspector (New panics otherwise). Default: no refunds.
func WithRefundIf(f func(c *gin.Context) bool) Option {
	return func(o *options) { o.Refund = f }
}

// WithLimitFunc sets a function that returns each request's limit, for limits that depend
// on the user's plan and the like; the zero Limit leaves a request unlimited. See WithLimit
// for the default. A nil f is ignored.
func WithLimitFunc(f func(c *gin.Context) ratelimit.Limit) Option {
	return func(o *options) { o.SetLimitFunc(f) }
}

// WithCostFunc sets how many tokens a request takes, for requests that cost more than
// others (a batch of n items). Default: 1.
func WithCostFunc(f func(c *gin.Context) int) Option {
	return func(o *options) { o.SetCost("WithCostFunc", f) }
}

// WithSkipFunc sets a function that exempts requests from limiting: when it returns true
// the limiter is not asked and no rate-limit header is sent. Default: nothing is skipped.
func WithSkipFunc(f func(c *gin.Context) bool) Option {
	return func(o *options) { o.Skip = f }
}

// WithPriorityFunc sets a function that gives each request its priority (ratelimit.Priority):
// a request of a lower priority is admitted only while its bucket keeps a reserve for the
// higher ones (the limiter's reserves: local.WithReserves, distributed.WithReserves), so
// that a flood of sheddable requests (c.FullPath() == "/stats") cannot take the tokens of
// critical ones ("/login", "/pay"). The priority goes in the context the limiter is asked with
// (ratelimit.WithPriority) and to the observer (WithObserver). Default: the priority the
// request's context carries, ratelimit.Critical unless code before the middleware set one.
// See "Priority reserves" in docs/algorithms.md.
func WithPriorityFunc(f func(c *gin.Context) ratelimit.Priority) Option {
	return func(o *options) { o.Priority = f }
}

// WithDeniedHandler sets what answers a denied request, after the rate-limit headers and
// Retry-After are set; the middleware aborts the chain afterwards. Default: DeniedJSON.
func WithDeniedHandler(f func(c *gin.Context, res ratelimit.Result)) Option {
	return func(o *options) {
		if f == nil {
			f = DeniedJSON
		}
		o.denied = f
	}
}

// WithErrorHandler sets what is told about a key function's failure and the limiter's
// errors, before the middleware acts on them; a handler that aborts the request answers it
// itself. Default: the error is attached with c.Error, for gin.Logger and other
// error-reporting middleware.
func WithErrorHandler(f func(c *gin.Context, err error)) Option {
	return func(o *options) {
		if f == nil {
			f = reportError
		}
		o.onError = f
	}
}

// WithErrorPolicy sets what happens to a request when the limiter fails (Redis unreachable,
// limiter closed). Default: ratelimit.FailOpen, the request proceeds;
// ratelimit.FailClosed answers 503.
func WithErrorPolicy(p ratelimit.ErrorPolicy) Option {
	return func(o *options) { o.Policy = p }
}

// WithHeaderStyle sets which rate-limit headers responses carry (see package headers);
// headers.StyleNone sends none. Default: headers.StyleXRateLimit. Denials carry
// Retry-After whatever the style.
func WithHeaderStyle(s headers.Style) Option {
	return func(o *options) { o.SetStyle(s) }
}

// WithPolicyName sets the policy name of the IETF RateLimit-Policy and RateLimit headers.
// Default: headers.DefaultPolicyName, "default".
func WithPolicyName(name string) Option {
	return func(o *options) {
		if name == "" {
			name = headers.DefaultPolicyName
		}
		o.PolicyName = name
	}
}

// WithObserver reports every decision to obs (observe.Observer; packages otelmetrics,
// prommetrics and slogobserver have ready ones), under the policy name of WithPolicyName,
// never the key. Default: none. See docs/observability.md.
func WithObserver(obs observe.Observer) Option {
	return func(o *options) { o.Observer = obs }
}

// WithShadow makes the middleware decide and report every request, but let every one
// proceed (no denial, no Retry-After, headers only when WithHeaderStyle asks), in buckets
// apart from the enforced ones: a safe rollout of a new limit. A shadow decision waits for
// the limiter at most 10 ms, and after the limiter fails, shadow decisions pause for a
// second: a shadow limit never slows the real traffic by more. Default: off. See
// docs/middleware.md.
func WithShadow() Option {
	return func(o *options) { o.Shadow = true }
}
