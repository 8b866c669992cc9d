// Package pipeline is the one request pipeline of the middlewares (ginmw, httpmw, grpcmw):
// skip, limit, key, cost, priority, decide, error policy, hold for a shaper's delay. It knows no
// framework: each middleware supplies how to read its request (the functions of Options,
// over its request type R) and turns the Decision into its framework's answer.
package pipeline

import (
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/internal/nilarg"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
)

// UnkeyedKey is the key under which requests are limited when the key function fails or
// returns a key the limiter cannot take (empty, or longer than args.MaxKeyLen). It
// has no ':' in it, so no key function of this module can return it.
const UnkeyedKey = "unkeyed"

// Verdict says what a middleware does with a request.
type Verdict int

const (
	// Proceed lets the request go on. Decision.Decided says whether the limiter answered
	// (rate-limit headers are then due); it did not when the request was skipped or not
	// limited, or when the limiter failed and the middleware fails open.
	Proceed Verdict = iota
	// Deny answers that the request is limited (HTTP 429, gRPC ResourceExhausted).
	Deny
	// TooCostly answers that the request can never be allowed: its cost exceeds the
	// limit's Burst (ratelimit.ErrExceedsBurst). Clients must not retry it.
	TooCostly
	// Invalid refuses a request the limiter could not decide because of its arguments
	// (a cost below 1, a limit the backend rejects): a mistake in the program, refused
	// whatever the error policy, since failing open would let it bypass the limit.
	Invalid
	// Unavailable refuses a request the limiter failed to decide, with FailClosed.
	Unavailable
	// Busy refuses a request the rate limit let through but that found no permit to run
	// (WithConcurrency): its key has as many requests in flight as allowed, and no room
	// to wait (concurrency.ErrQueueFull). HTTP 503 with Retry-After, gRPC
	// ResourceExhausted without pushback.
	Busy
	// Ended ends a request whose own context ended before it could proceed: the client
	// left or its deadline passed. Decision.Err is the context's error.
	Ended
	// Handled ends a request that the error handler answered itself. Decision.Err is what
	// the error handler returned.
	Handled
)

// Decision is the pipeline's answer about one request. A request under one limit and one
// under several (WithLimits) are decided the same way; Reqs says which it was.
type Decision struct {
	Verdict Verdict
	// Decided reports whether Result holds the limiter's answer.
	Decided bool
	// Result is the answer of the binding limit (of the only one, or of MultiResult.Binding),
	// with Allowed and RetryAfter those of the request as a whole.
	Result ratelimit.Result
	// Limit, Key, Policy and Cost are the binding limit's: its limit, the key the request
	// was limited under (as the key function or WithLimits gave it, or UnkeyedKey), the
	// name of its policy, the tokens it asked for. Limit is zero when the request was
	// skipped or not limited.
	Limit  ratelimit.Limit
	Key    string
	Policy string
	Cost   int
	// Err is the error behind the verdict, if any.
	Err error
	// Reqs are the request's limits with WithLimits, as the limiter was asked them (each
	// with its bucket key: see bucket.Name), and Multi their decision; nil for one limit.
	Reqs  []ratelimit.Request
	Multi ratelimit.MultiResult
	// Charged reports whether the limiter took tokens for the request: what a refund gives
	// back.
	Charged bool
	// Permit is the request's permit to run, with WithConcurrency or a policy's
	// concurrency: the middleware releases it when the handler returns. The zero Permit
	// holds nothing.
	Permit concurrency.Permit
	// Shadow reports that the request was decided in shadow mode (WithShadow, or its
	// policy's shadow field): in buckets of their own, and let through.
	Shadow bool

	// bucket is the bucket key of a request under one limit.
	bucket string
	// held reports that the tokens were taken by a hold (ratelimit.Settler's Hold, with
	// WithSettle), which Settle ends; priority is the priority the request was decided at.
	held     bool
	priority priority.Level
}

// ErrNoLimit is New's error for options that give no limit.
var ErrNoLimit = errors.New("no limit configured")

// Pipeline decides requests of type R.
type Pipeline[R any] struct {
	limiter ratelimit.Limiter
	// multi, inspector and validator are the limiter's capabilities (ratelimit.As), nil for
	// one it lacks.
	multi     ratelimit.MultiLimiter
	inspector ratelimit.Inspector
	validator ratelimit.LimitValidator
	settler   ratelimit.Settler // WithSettle's, when asked for; it holds each estimate
	// holdOrigin is settler when it says which limiter decided, and the observer asks.
	holdOrigin observe.HoldOriginReporter
	opts       Options[R]
	onError    func(R, error) error
	prefix     string

	// observer, when not nil, is told of each decision: see decide; clock times them.
	observer observe.Observer
	clock    *observe.Stopwatch
	backend  string
	origin   observe.OriginReporter
	// permitBackend names the concurrency limiter (WithConcurrency) to the observer.
	permitBackend string

	// shadowResume is when shadow decisions resume after a backend failure, in nanoseconds
	// since epoch on the monotonic clock: see ShadowPause.
	shadowResume atomic.Int64
	epoch        time.Time
	shadowBudget time.Duration

	// zeroReported records that a zero Limit from WithLimitFunc was reported (reportZero).
	zeroReported atomic.Bool
}

// shadowBudget is the ShadowBudget of the pipelines New builds; tests that run shadow
// decisions on a loaded machine lengthen it (export_test.go).
var shadowBudget = ShadowBudget

// ShadowBudget is the longest a shadow decision may delay the request it is made for:
// in shadow mode the limiter is asked under a deadline of ShadowBudget (or the request's
// own, when shorter). A shadow decision that fails because the backend did not answer
// (a timeout, an unavailable backend) pauses shadow decisions for ShadowPause: requests
// then proceed at once, undecided, so that an outage costs shadow traffic at most one
// ShadowBudget per request in flight when it began, not one per request.
const (
	ShadowBudget = 10 * time.Millisecond
	ShadowPause  = time.Second
)

// New returns the pipeline of a middleware whose errors begin with prefix ("ginmw: "),
// after settling what o leaves to it (shadow mode's header style), so that the middleware
// reads the same options. onError is told about key and limiter failures and returns nil
// to let the pipeline go on, or an error when it has ended the request itself. New fails
// on a configuration that cannot work: a nil limiter, no limit, a fixed limit that is
// neither zero nor accepted by l, or rules in force that l cannot decide; and makes every
// later set of the rules pass the same check to come into force (see checkRules).
func New[R any](prefix string, l ratelimit.Limiter, o *Options[R], onError func(R, error) error) (*Pipeline[R], error) {
	l, err := o.rateLimiter(l)
	if err != nil {
		return nil, err
	}
	p := &Pipeline[R]{limiter: l, onError: onError, prefix: prefix, epoch: time.Now(), shadowBudget: shadowBudget}
	if err := p.capabilities(o); err != nil {
		return nil, err
	}
	if o.Shadow && !o.styleSet {
		o.Style = headers.StyleNone
	}
	p.opts = *o
	if o.Rules != nil {
		if err := p.requireRules(o.Rules); err != nil {
			return nil, fmt.Errorf("WithRules: the set in force: %w", err)
		}
	}
	p.observe(o.Observer)
	return p, nil
}

// rateLimiter returns the limiter of o's rate limits, l, or nil when o gives none and only
// the permits of WithConcurrency limit requests; an error for options that cannot work: a nil
// limiter, a nil observer, two options in conflict, no limit at all.
func (o *Options[R]) rateLimiter(l ratelimit.Limiter) (ratelimit.Limiter, error) {
	rateless := o.Limit == nil && o.Limits == nil && o.Rules == nil
	if nilarg.Is(l) && !(rateless && o.Concurrency != nil) {
		return nil, errors.New("nil Limiter")
	}
	if nilarg.Typed(o.Observer) {
		return nil, fmt.Errorf("WithObserver: a nil %T", o.Observer)
	}
	if err := o.conflicts(); err != nil {
		return nil, err
	}
	switch {
	case !rateless:
		return l, nil
	case o.Concurrency == nil:
		return nil, ErrNoLimit
	}
	return nil, nil // a typed nil: no rate limit, only the permits of WithConcurrency
}

// capabilities finds the capabilities of p's limiter that o needs, through any wrapper
// (ratelimit.As), once; an error names an option the limiter cannot serve, or a fixed limit
// it refuses.
func (p *Pipeline[R]) capabilities(o *Options[R]) error {
	l := p.limiter
	p.multi, _ = ratelimit.As[ratelimit.MultiLimiter](l)
	p.inspector, _ = ratelimit.As[ratelimit.Inspector](l)
	p.validator, _ = ratelimit.As[ratelimit.LimitValidator](l)
	if o.Limits != nil && p.multi == nil {
		return fmt.Errorf("WithLimits: %T does not decide several limits at once (ratelimit.MultiLimiter)", l)
	}
	if o.Rules != nil && p.multi == nil {
		return fmt.Errorf("WithRules: %T does not decide several limits at once (ratelimit.MultiLimiter), which a policy may have", l)
	}
	if o.Refund != nil && p.inspector == nil {
		return fmt.Errorf("WithRefundIf: %T cannot refund (ratelimit.Inspector)", l)
	}
	var err error
	if p.settler, err = settlerFor(l, o.Settle != nil); err != nil {
		return err
	}
	return o.check(p.validator)
}

// observe sets p to tell o, WithObserver's observer, of each decision: see ask and
// reportPermit.
func (p *Pipeline[R]) observe(o observe.Observer) {
	if p.observer = observe.Join(o); p.observer == nil {
		return
	}
	p.clock = observe.NewStopwatch(p.observer)
	p.backend = "none"
	if p.limiter != nil {
		p.backend = observe.BackendName(p.limiter)
	}
	p.origin, _ = ratelimit.As[observe.OriginReporter](p.limiter)
	p.holdOrigin, _ = p.settler.(observe.HoldOriginReporter)
	if p.opts.Concurrency != nil {
		p.permitBackend = observe.BackendName(p.opts.Concurrency)
	}
}

// Style returns the header style of d's answer: none for a shadow decision, unless the
// style was chosen (WithHeaderStyle).
func (p *Pipeline[R]) Style(d *Decision) headers.Style {
	if d.Shadow && !p.opts.styleSet {
		return headers.StyleNone
	}
	return p.opts.Style
}

// The messages of the middlewares' answers, the same in every framework. They name no key,
// which may be personal data.
const (
	MsgDenied      = "rate limit exceeded"
	MsgTooCostly   = "request cost exceeds the rate limit"
	MsgInvalid     = "rate limit misconfigured"
	MsgUnavailable = "rate limiter unavailable"
	MsgBusy        = "too many requests in flight"
)

// DeniedBody is the JSON body of an HTTP denial: {"error":"rate limit exceeded",
// "retry_after":N}, N being Retry-After in seconds.
type DeniedBody struct {
	Error      string `json:"error"`
	RetryAfter int64  `json:"retry_after"`
}

// AppendDeniedBody appends the JSON of DeniedBody{MsgDenied, retryAfter} to dst, as
// json.Marshal writes it, without the encoder's allocations: a denial is the answer a
// flood of requests gets.
func AppendDeniedBody(dst []byte, retryAfter int64) []byte {
	dst = append(dst, `{"error":"`+MsgDenied+`","retry_after":`...)
	dst = strconv.AppendInt(dst, retryAfter, 10)
	return append(dst, '}')
}

// ErrorBody is the JSON body of the other HTTP answers: {"error":"…"}.
type ErrorBody struct {
	Error string `json:"error"`
}
