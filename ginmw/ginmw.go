package ginmw

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
)

// UnkeyedKey is the key under which requests are limited when the key function fails or
// returns an empty key. All such requests share it, so leaving out whatever the key is made
// of (a header, a user ID) buys no extra requests. It has no ':' in it, so no key from
// package keyfuncs can collide with it.
const UnkeyedKey = "unkeyed"

// New returns a Gin middleware that asks l whether each request may proceed.
//
// For each request not skipped (WithSkipFunc), it finds the limit (WithLimit or
// WithLimitFunc; the zero Limit means this request is not limited), the key (WithKeyFunc)
// and the cost (WithCostFunc), and calls l.AllowN. An allowed request gets rate-limit
// headers (WithHeaderStyle) and proceeds; a denied one also gets Retry-After and is answered
// by the denied handler (WithDeniedHandler, 429 by default) and aborted. When l fails, the
// error handler is told and the error policy decides (WithErrorPolicy: proceed by default,
// or 503).
//
// New panics if l is nil, if neither WithLimit nor WithLimitFunc was given, or if the limit
// of WithLimit is neither zero nor valid: these are mistakes in the program, not conditions
// to handle at run time.
func New(l ratelimit.Limiter, opts ...Option) gin.HandlerFunc {
	if l == nil {
		panic("ginmw: New: nil Limiter")
	}
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	if o.limit == nil {
		panic("ginmw: New: no limit configured: pass WithLimit or WithLimitFunc")
	}
	if o.fixed != nil && !o.fixed.IsZero() {
		if err := o.fixed.Validate(); err != nil {
			panic(fmt.Sprintf("ginmw: New: WithLimit(%v): %v", *o.fixed, err))
		}
	}
	m := &middleware{limiter: l, options: o}
	return m.handle
}

type middleware struct {
	limiter ratelimit.Limiter
	options
}

func (m *middleware) handle(c *gin.Context) {
	if m.skip != nil && m.skip(c) {
		return
	}
	limit := m.limit(c)
	if limit.IsZero() {
		return
	}
	n := 1
	if m.cost != nil {
		n = m.cost(c)
	}
	key, err := m.key(c)
	if err == nil && key == "" {
		err = ratelimit.ErrKeyEmpty
	}
	if err != nil {
		m.onError(c, fmt.Errorf("ginmw: no key, limiting as %q: %w", UnkeyedKey, err))
		if c.IsAborted() {
			return
		}
		key = UnkeyedKey
	}

	res, err := m.limiter.AllowN(c.Request.Context(), key, limit, n)
	if err != nil {
		m.fail(c, err)
		return
	}
	headers.Set(c.Writer.Header(), m.style, m.policyName, res)
	if !res.Allowed {
		m.denied(c, res)
		c.Abort()
		return
	}
	if res.Delay > 0 {
		m.hold(c, res.Delay)
	}
}

// fail applies the error policy to a limiter error.
func (m *middleware) fail(c *gin.Context, err error) {
	m.onError(c, fmt.Errorf("ginmw: %w", err))
	switch {
	case c.IsAborted():
	case errors.Is(err, ratelimit.ErrExceedsBurst):
		// Not a failure to decide: the request can never be allowed, so failing open would
		// let through exactly the requests the limit exists to stop.
		c.AbortWithStatusJSON(http.StatusTooManyRequests, errorBody{Error: "request cost exceeds the rate limit"})
	case m.policy == ratelimit.FailClosed:
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, errorBody{Error: "rate limiter unavailable"})
	}
}

// hold waits d before the request proceeds, as a shaping algorithm (ratelimit.LeakyBucket)
// asks; if the client goes away first, the request is aborted with 503.
func (m *middleware) hold(c *gin.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.Request.Context().Done():
		c.AbortWithStatus(http.StatusServiceUnavailable)
	}
}

// deniedBody is the JSON body of DeniedJSON.
type deniedBody struct {
	Error      string `json:"error"`
	RetryAfter int64  `json:"retry_after"`
}

// errorBody is the JSON body of other error answers.
type errorBody struct {
	Error string `json:"error"`
}

// DeniedJSON is the default denied handler: it answers 429 Too Many Requests with the body
// {"error":"rate limit exceeded","retry_after":N}, where N is the Retry-After value in
// seconds. Call it from a handler of your own to keep this answer in some cases.
func DeniedJSON(c *gin.Context, res ratelimit.Result) {
	c.AbortWithStatusJSON(http.StatusTooManyRequests, deniedBody{
		Error:      "rate limit exceeded",
		RetryAfter: headers.RetryAfterSeconds(res.RetryAfter),
	})
}

// reportError is the default error handler: it attaches err to the request for gin.Logger
// and other error-reporting middleware.
func reportError(c *gin.Context, err error) {
	_ = c.Error(err)
}
