package ginmw

import (
	"errors"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/internal/pipeline"
)

// UnkeyedKey is the key under which requests are limited when the key function fails or
// returns a key the limiter cannot take (empty, or longer than 512 bytes): all
// such requests share one bucket. No key function of this module returns it.
const UnkeyedKey = pipeline.UnkeyedKey

// New returns a Gin middleware that asks l whether each request may proceed; the package
// documentation says how it answers. It panics if l is nil, if no limit is configured, if
// two options conflict (each option says with which), or if a fixed limit (WithLimit,
// WithRouteLimits) is invalid or not accepted by l, the zero Limit included but for a
// table's default: these are mistakes in the program, not conditions to handle at run time.
func New(l ratelimit.Limiter, opts ...Option) gin.HandlerFunc {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	p, err := pipeline.New("ginmw: ", l, &o.Options, func(c *gin.Context, err error) error {
		o.onError(c, err)
		if c.IsAborted() {
			return errAnswered
		}
		return nil
	})
	if errors.Is(err, pipeline.ErrNoLimit) {
		panic("ginmw: New: no limit configured: pass WithLimit, WithRouteLimits, WithLimitFunc, WithLimits or WithRules")
	}
	if err != nil {
		panic("ginmw: New: " + err.Error())
	}
	m := &middleware{p: p, options: o}
	return m.handle
}

type middleware struct {
	p *pipeline.Pipeline[*gin.Context]
	options
}

func (m *middleware) handle(c *gin.Context) {
	var d pipeline.Decision
	m.p.Decide(c.Request.Context(), c, &d)
	switch {
	case !d.Decided:
	case d.Reqs != nil:
		headers.SetMulti(c.Writer.Header(), m.p.Style(&d), d.Reqs, d.Multi)
	default:
		headers.Set(c.Writer.Header(), m.p.Style(&d), d.Policy, d.Result)
	}
	switch d.Verdict {
	case pipeline.Proceed:
		if d.Permit.Held() || (m.Refund != nil || m.Settle != nil) && d.Charged {
			defer d.Permit.Release() // after the handlers, even one that panics
			c.Next()                 // returns once a streamed body (c.Stream) has ended
			m.p.Refund(c.Request.Context(), c, &d)
			m.p.Settle(c.Request.Context(), c, &d)
		}
	case pipeline.Busy:
		c.Header("Retry-After", "1")
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, pipeline.ErrorBody{Error: pipeline.MsgBusy})
	case pipeline.Deny:
		m.denied(c, d.Result)
		c.Abort()
	case pipeline.TooCostly:
		c.AbortWithStatusJSON(http.StatusTooManyRequests, pipeline.ErrorBody{Error: pipeline.MsgTooCostly})
	case pipeline.Invalid:
		c.AbortWithStatusJSON(http.StatusInternalServerError, pipeline.ErrorBody{Error: pipeline.MsgInvalid})
	case pipeline.Unavailable:
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, pipeline.ErrorBody{Error: pipeline.MsgUnavailable})
	case pipeline.Ended:
		c.AbortWithStatus(http.StatusServiceUnavailable)
	case pipeline.Handled:
		c.Abort()
	}
}

// errAnswered tells the pipeline that the error handler aborted the request.
var errAnswered = errors.New("ginmw: the error handler answered the request")

// DeniedJSON is the default denied handler: it answers 429 Too Many Requests with the body
// {"error":"rate limit exceeded","retry_after":N}, where N is the Retry-After value in
// seconds. Call it from a handler of your own to keep this answer in some cases.
func DeniedJSON(c *gin.Context, res ratelimit.Result) {
	var buf [64]byte
	c.Abort()
	c.Header("Content-Type", "application/json; charset=utf-8")
	c.Status(http.StatusTooManyRequests)
	_, _ = c.Writer.Write(pipeline.AppendDeniedBody(buf[:0], headers.RetryAfterSeconds(res.RetryAfter)))
}

// reportError is the default error handler: it attaches err to the request for gin.Logger
// and other error-reporting middleware.
func reportError(c *gin.Context, err error) {
	_ = c.Error(err)
}
