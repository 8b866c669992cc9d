package httpmw

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/internal/pipeline"
)

// UnkeyedKey is the key under which requests are limited when the key function fails or
// returns a key the limiter cannot take (empty, or longer than 512 bytes): all
// such requests share one bucket. No key function of this module returns it.
const UnkeyedKey = pipeline.UnkeyedKey

// New returns a net/http middleware that asks l whether each request may proceed; the
// package documentation says how it answers. It panics if l is nil, if no limit is
// configured, if two options conflict (each option says with which), or if a fixed limit
// (WithLimit, WithRouteLimits) is invalid or not accepted by l, the zero Limit included but
// for a table's default: these are mistakes in the program, not conditions to handle at
// run time.
func New(l ratelimit.Limiter, opts ...Option) func(http.Handler) http.Handler {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	p, err := pipeline.New("httpmw: ", l, &o.Options, func(x exchange, err error) error {
		if o.onError(x.w, x.r, err) {
			return errAnswered
		}
		return nil
	})
	if errors.Is(err, pipeline.ErrNoLimit) {
		panic("httpmw: New: no limit configured: pass WithLimit, WithRouteLimits, WithLimitFunc, WithLimits or WithRules")
	}
	if err != nil {
		panic("httpmw: New: " + err.Error())
	}
	m := &middleware{p: p, options: o}
	return func(next http.Handler) http.Handler {
		mux, _ := next.(*http.ServeMux)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			x := exchange{w: w, r: r}
			if m.routes || m.Rules != nil {
				x.pattern = m.routeOf(w, r, mux)
			}
			var d pipeline.Decision
			if !m.admit(x, &d) {
				return
			}
			defer d.Permit.Release() // after the handler, even one that panics
			if m.Refund == nil && m.Settle == nil || !d.Charged {
				next.ServeHTTP(w, r)
				return
			}
			sw := &statusWriter{ResponseWriter: w}
			next.ServeHTTP(wrap(sw), r) // returns once a streamed body has ended
			x.status = sw.status()
			m.p.Refund(r.Context(), x, &d)
			m.p.Settle(r.Context(), x, &d)
		})
	}
}

type middleware struct {
	p *pipeline.Pipeline[exchange]
	options
	unrouted atomic.Bool // a request without a route pattern was reported
}

// errNoPattern is reported, once, for the first request WithRouteLimits finds no pattern
// for.
var errNoPattern = errors.New("httpmw: WithRouteLimits: a request has no route pattern, so it gets the default limit: " +
	"wrap the handlers http.ServeMux routes to, or the *http.ServeMux itself, or find patterns with WithRouteFunc")

// routeOf returns r's route pattern for WithRouteLimits and WithRules: WithRouteFunc's, or
// the one http.ServeMux routed it by, or, when the middleware wraps mux, the one mux will
// route it by. With WithRouteLimits, the first request without one is reported to the error
// handler (a rules file may match on other things than routes).
func (m *middleware) routeOf(w http.ResponseWriter, r *http.Request, mux *http.ServeMux) string {
	pattern := r.Pattern
	switch {
	case m.route != nil:
		pattern = m.route(r)
	case pattern == "" && mux != nil:
		_, pattern = mux.Handler(r)
	}
	if pattern == "" && m.routes && !m.unrouted.Load() && m.unrouted.CompareAndSwap(false, true) {
		m.onError(w, r, errNoPattern)
	}
	return pattern
}

// admit decides x, in d, and reports whether it may proceed; when it may not, it has
// answered it.
func (m *middleware) admit(x exchange, d *pipeline.Decision) bool {
	w, r := x.w, x.r
	m.p.Decide(r.Context(), x, d)
	switch {
	case !d.Decided:
	case d.Reqs != nil:
		headers.SetMulti(w.Header(), m.p.Style(d), d.Reqs, d.Multi)
	default:
		headers.Set(w.Header(), m.p.Style(d), d.Policy, d.Result)
	}
	switch d.Verdict {
	case pipeline.Proceed:
		return true
	case pipeline.Deny:
		m.denied(w, r, d.Result)
	case pipeline.TooCostly:
		writeJSON(w, http.StatusTooManyRequests, pipeline.ErrorBody{Error: pipeline.MsgTooCostly})
	case pipeline.Invalid:
		writeJSON(w, http.StatusInternalServerError, pipeline.ErrorBody{Error: pipeline.MsgInvalid})
	case pipeline.Unavailable:
		writeJSON(w, http.StatusServiceUnavailable, pipeline.ErrorBody{Error: pipeline.MsgUnavailable})
	case pipeline.Busy:
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, pipeline.ErrorBody{Error: pipeline.MsgBusy})
	case pipeline.Ended:
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	return false
}

// errAnswered tells the pipeline that the error handler answered the request.
var errAnswered = errors.New("httpmw: the error handler answered the request")

// DeniedJSON is the default denied handler: it answers 429 Too Many Requests with the body
// {"error":"rate limit exceeded","retry_after":N}, where N is the Retry-After value in
// seconds. Call it from a handler of your own to keep this answer in some cases.
func DeniedJSON(w http.ResponseWriter, _ *http.Request, res ratelimit.Result) {
	var buf [64]byte
	body := pipeline.AppendDeniedBody(buf[:0], headers.RetryAfterSeconds(res.RetryAfter))
	w.Header().Set("Content-Type", jsonType)
	w.WriteHeader(http.StatusTooManyRequests)
	_, _ = w.Write(append(body, '\n')) // as json.Encoder ends a value
}

// jsonType is the Content-Type of the middleware's JSON answers.
const jsonType = "application/json; charset=utf-8"

// writeJSON answers with status and v as a JSON body.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", jsonType)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client may have gone; there is no one to tell
}

// logErrors returns the default error handler: it logs err, at most once a second (see
// pipeline.LogEvery) with the number of errors left out since the last line, and lets the
// middleware go on.
func logErrors() func(http.ResponseWriter, *http.Request, error) bool {
	t := pipeline.NewThrottle()
	return func(_ http.ResponseWriter, r *http.Request, err error) bool {
		if ok, dropped := t.Allow(); ok {
			slog.ErrorContext(r.Context(), "rate limiter", "method", r.Method, "error", err, "suppressed", dropped)
		}
		return false
	}
}
