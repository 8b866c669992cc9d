package ginmw

import (
	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/clientip"
	"github.com/sluice-go/ratelimit/internal/pipeline"
	"github.com/sluice-go/ratelimit/keyfuncs"
)

// The options the middlewares share are generated into options_gen.go from one table;
// the ones below are Gin's own.
//go:generate go run ../internal/optionsgen ginmw

// Option configures the middleware built by New. A nil Option is skipped, and a nil
// function given to an option means that option's default.
type Option func(*options)

type options struct {
	pipeline.Options[*gin.Context]
	denied  func(*gin.Context, ratelimit.Result)
	onError func(*gin.Context, error)
}

func defaultOptions() options {
	o := options{
		Options: pipeline.Defaults[*gin.Context](keyfuncs.ClientIP()),
		denied:  DeniedJSON,
		onError: reportError,
	}
	ip := clientip.DefaultOptions() // keyfuncs.ClientIP's, in parts
	o.KeyParts = func(c *gin.Context) (string, string, bool) { return ip.RequestKeyParts(c.Request) }
	return o
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

// WithErrorHandler sets what is told about a key function's failure, the limiter's errors and,
// once, a zero Limit from WithLimitFunc, before the middleware acts on them; a handler that
// aborts the request answers it itself. Default: the error is attached with c.Error, for
// gin.Logger and other error-reporting middleware.
func WithErrorHandler(f func(c *gin.Context, err error)) Option {
	return func(o *options) {
		if f == nil {
			f = reportError
		}
		o.onError = f
	}
}
