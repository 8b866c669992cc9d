package httpmw

import (
	"net/http"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/internal/pipeline"
	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
	"github.com/sluice-go/ratelimit/observe"
)

// Option configures the middleware built by New. A nil Option is skipped, and a nil
// function given to an option means that option's default.
type Option func(*options)

// exchange is what the pipeline reads of a request: the request and its response writer.
type exchange struct {
	w       http.ResponseWriter
	r       *http.Request
	status  int    // after the handler, for WithRefundIf
	pattern string // the request's route pattern, with WithRouteLimits (see routeOf)
}

type options struct {
	pipeline.Options[exchange]
	denied  func(w http.ResponseWriter, r *http.Request, res ratelimit.Result)
	onError func(w http.ResponseWriter, r *http.Request, err error) bool
	// routes reports that the limits are per route (WithRouteLimits), and route, when not
	// nil, finds a request's route pattern (WithRouteFunc).
	routes bool
	route  func(r *http.Request) string
}

func defaultOptions() options {
	return options{
		Options: pipeline.Defaults(keyOf(httpkeys.ClientIP())),
		denied:  DeniedJSON,
		onError: logErrors(),
	}
}

func keyOf(f func(r *http.Request) (string, error)) func(exchange) (string, error) {
	return func(x exchange) (string, error) { return f(x.r) }
}

// WithKeyFunc sets how a request's key is found. Default: httpkeys.ClientIP(), the socket
// peer's address; behind a proxy, pass
// httpkeys.ClientIP(httpkeys.WithTrustedProxies(...)). A request whose key cannot be found
// is limited under UnkeyedKey (see "Security" in the package documentation).
func WithKeyFunc(f func(r *http.Request) (string, error)) Option {
	return func(o *options) {
		if f == nil {
			o.SetKey("WithKeyFunc", nil, keyOf(httpkeys.ClientIP()))
			return
		}
		o.SetKey("WithKeyFunc", keyOf(f), nil)
	}
}

// WithLimit sets the limit of every request. Default: none: New panics unless one of
// WithLimit, WithRouteLimits, WithLimitFunc and WithLimits gives the limits, and when two of
// them are given. l must be a valid limit: the zero Limit (PerMinute(0), a setting left
// unset) is refused too, since it would leave every request unlimited; exempt requests with
// WithSkipFunc instead.
func WithLimit(l ratelimit.Limit) Option {
	return func(o *options) { o.SetLimit(l) }
}

// WithRouteLimits sets a limit per route: limits maps route patterns ("GET /v1/items/{id}",
// "POST /login") to their limits, and other requests get def. Each route is a policy of its
// own, named by its pattern in the headers, the metrics and its buckets: two routes never
// share a bucket, whatever their limits. An entry of the zero Limit is refused, as by
// WithLimit; def may be the zero Limit, which leaves the other routes unlimited. The map is
// copied.
//
// A request's pattern is the one http.ServeMux routed it by (Request.Pattern), when the
// middleware wraps the handlers the mux routes to; the one the mux will route it by, when
// the middleware wraps the *http.ServeMux itself; or what WithRouteFunc says (chi's
// RoutePattern, say). A request with no pattern gets def, and the first one is reported to
// the error handler: route limits are never inert without a word. See WithLimit for the
// default.
func WithRouteLimits(limits map[string]ratelimit.Limit, def ratelimit.Limit) Option {
	return func(o *options) {
		o.routes = true
		o.SetTable("WithRouteLimits", limits, def, func(x exchange) string { return x.pattern })
	}
}

// WithRouteFunc sets how WithRouteLimits finds a request's route pattern, for routers other
// than http.ServeMux: with chi, mount the middleware with r.With or inside a route, where
// chi has matched the route, and pass
// func(r *http.Request) string { return chi.RouteContext(r.Context()).RoutePattern() }.
// Default: the pattern of http.ServeMux (see WithRouteLimits). A nil f means the default.
func WithRouteFunc(f func(r *http.Request) string) Option {
	return func(o *options) { o.route = f }
}

// WithLimits gives each request several limits, decided all or nothing: f returns them,
// each with its key, limit, cost and name ("5 a minute and 20 an hour per client"). Every
// bucket is charged or none is; headers report the binding limit, and RateLimit-Policy
// lists every limit by name. Each request's keys and costs come with its limits:
// New panics when WithKeyFunc, WithCostFunc or another limit option is given too, and when
// the limiter does not implement ratelimit.MultiLimiter. A nil f is ignored.
// See docs/limits.md.
func WithLimits(f func(r *http.Request) []ratelimit.Request) Option {
	return func(o *options) {
		if f != nil {
			o.SetLimits(func(x exchange) []ratelimit.Request { return f(x.r) })
		}
	}
}

// WithRefundIf gives a request's tokens back after the handler ran, when f says so, given
// the final status the handler answered: count only failed logins (status == 401), only
// server errors. An informational status before it (103 Early Hints) is not the answer;
// 200 is given when the handler wrote no final status, as net/http answers then, and
// when it hijacked the connection. The handler's ResponseWriter has the same optional
// interfaces (http.Flusher, http.Hijacker, io.ReaderFrom, http.Pusher) as the server's,
// and http.ResponseController reaches the rest. It needs a limiter that implements
// ratelimit.Inspector (New panics otherwise). Default: no refunds.
func WithRefundIf(f func(r *http.Request, status int) bool) Option {
	return func(o *options) {
		o.Refund = nil
		if f != nil {
			o.Refund = func(x exchange) bool { return f(x.r, x.status) }
		}
	}
}

// WithLimitFunc sets a function that returns each request's limit, for limits that depend
// on the user's plan and the like; the zero Limit leaves a request unlimited. See WithLimit
// for the default. A nil f is ignored.
func WithLimitFunc(f func(r *http.Request) ratelimit.Limit) Option {
	return func(o *options) {
		if f != nil {
			o.SetLimitFunc(func(x exchange) ratelimit.Limit { return f(x.r) })
		}
	}
}

// WithCostFunc sets how many tokens a request takes, for requests that cost more than
// others (a batch of n items). Default: 1.
func WithCostFunc(f func(r *http.Request) int) Option {
	return func(o *options) {
		var cost func(exchange) int
		if f != nil {
			cost = func(x exchange) int { return f(x.r) }
		}
		o.SetCost("WithCostFunc", cost)
	}
}

// WithSkipFunc sets a function that exempts requests from limiting: when it returns true
// the limiter is not asked and no rate-limit header is sent. Default: nothing is skipped.
func WithSkipFunc(f func(r *http.Request) bool) Option {
	return func(o *options) {
		o.Skip = nil
		if f != nil {
			o.Skip = func(x exchange) bool { return f(x.r) }
		}
	}
}

// WithPriorityFunc sets a function that gives each request its priority (ratelimit.Priority):
// a request of a lower priority is admitted only while its bucket keeps a reserve for the
// higher ones (the limiter's reserves: local.WithReserves, distributed.WithReserves), so
// that a flood of sheddable requests (r.URL.Path == "/stats") cannot take the tokens of
// critical ones ("/login", "/pay"). The priority goes in the context the limiter is asked with
// (ratelimit.WithPriority) and to the observer (WithObserver). Default: the priority the
// request's context carries, ratelimit.Critical unless code before the middleware set one.
// A nil f means the default. See "Priority reserves" in docs/algorithms.md.
func WithPriorityFunc(f func(r *http.Request) ratelimit.Priority) Option {
	return func(o *options) {
		o.Priority = nil
		if f != nil {
			o.Priority = func(x exchange) ratelimit.Priority { return f(x.r) }
		}
	}
}

// WithDeniedHandler sets what answers a denied request, after the rate-limit headers and
// Retry-After are set; the next handler does not run. Default: DeniedJSON.
func WithDeniedHandler(f func(w http.ResponseWriter, r *http.Request, res ratelimit.Result)) Option {
	return func(o *options) {
		if f == nil {
			f = DeniedJSON
		}
		o.denied = f
	}
}

// WithErrorHandler sets what is told about a key function's failure and the limiter's
// errors, before the middleware acts on them. A handler that answers the request itself
// (with a 401, say) returns true, and the middleware does nothing more. Default: the error
// is logged with slog.Default() at error level, at most once a second with the number of
// errors left out since the last line, and false is returned.
func WithErrorHandler(f func(w http.ResponseWriter, r *http.Request, err error) (answered bool)) Option {
	return func(o *options) {
		if f == nil {
			f = logErrors()
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
