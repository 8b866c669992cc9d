package httpmw

import (
	"net/http"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/clientip"
	"github.com/sluice-go/ratelimit/internal/pipeline"
	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
)

// The options the middlewares share are generated into options_gen.go from one table;
// the ones below are net/http's own.
//go:generate go run ../internal/optionsgen httpmw

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
	o := options{
		Options: pipeline.Defaults(keyOf(httpkeys.ClientIP())),
		denied:  DeniedJSON,
		onError: logErrors(),
	}
	ip := clientip.DefaultOptions() // httpkeys.ClientIP's, in parts
	o.KeyParts = func(x exchange) (string, string, bool) { return ip.RequestKeyParts(x.r) }
	return o
}

func keyOf(f func(r *http.Request) (string, error)) func(exchange) (string, error) {
	return func(x exchange) (string, error) { return f(x.r) }
}

// WithRouteFunc sets how WithRouteLimits finds a request's route pattern, for routers other
// than http.ServeMux: with chi, mount the middleware with r.With or inside a route, where
// chi has matched the route, and pass
// func(r *http.Request) string { return chi.RouteContext(r.Context()).RoutePattern() }.
// Default: the pattern of http.ServeMux (see WithRouteLimits). A nil f means the default.
func WithRouteFunc(f func(r *http.Request) string) Option {
	return func(o *options) { o.route = f }
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

// WithErrorHandler sets what is told about a key function's failure, the limiter's errors and,
// once, a zero Limit from WithLimitFunc, before the middleware acts on them. A handler that
// answers the request itself (with a 401, say) returns true, and the middleware does nothing
// more. Default: the error is logged with slog.Default() at error level, at most once a second
// with the number of errors left out since the last line, and false is returned.
func WithErrorHandler(f func(w http.ResponseWriter, r *http.Request, err error) (answered bool)) Option {
	return func(o *options) {
		if f == nil {
			f = logErrors()
		}
		o.onError = f
	}
}
