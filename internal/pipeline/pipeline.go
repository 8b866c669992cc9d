// Package pipeline is the one request pipeline of the middlewares (ginmw, httpmw, grpcmw):
// skip, limit, key, cost, priority, decide, error policy, hold for a shaper's delay. It knows no
// framework: each middleware supplies how to read its request (the functions of Options,
// over its request type R) and turns the Decision into its framework's answer.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/internal/wait"
)

// UnkeyedKey is the key under which requests are limited when the key function fails or
// returns a key the limiter cannot take (empty, or longer than ratelimit.MaxKeyLen). It
// has no ':' in it, so no key function of this module can return it.
const UnkeyedKey = "unkeyed"

// Verdict says what a middleware does with a request.
type Verdict int

const (
	// Proceed lets the request go on. Decision.Decided says whether the limiter answered
	// (rate-limit headers are then due); it did not when the request was skipped or not
	// limited, or when the limiter failed under ratelimit.FailOpen.
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
	// Unavailable refuses a request the limiter failed to decide, under
	// ratelimit.FailClosed.
	Unavailable
	// Ended ends a request whose own context ended before it could proceed: the client
	// left or its deadline passed. Decision.Err is the context's error.
	Ended
	// Handled ends a request that the error handler answered itself. Decision.Err is what
	// the error handler returned.
	Handled
)

// Decision is the pipeline's answer about one request.
type Decision struct {
	Verdict Verdict
	// Decided reports whether Result holds the limiter's answer.
	Decided bool
	Result  ratelimit.Result
	// Limit is the request's limit; zero when the request was skipped or not limited.
	Limit ratelimit.Limit
	// Key is the key the request was decided under.
	Key string
	// Err is the error behind the verdict, if any.
	Err error
	// Cost is the number of tokens the request asked for (one limit).
	Cost int
	// Reqs are the request's limits, and Multi their decision, with WithLimits; Result is
	// then Multi's binding one, and Key and Limit its key and limit.
	Reqs  []ratelimit.Request
	Multi ratelimit.MultiResult
	// Charged reports whether the limiter took tokens for the request: what a refund gives
	// back.
	Charged bool
}

// ErrNoLimit is New's error for options that give no limit.
var ErrNoLimit = errors.New("no limit configured")

// Pipeline decides requests of type R.
type Pipeline[R any] struct {
	limiter ratelimit.Limiter
	opts    Options[R]
	onError func(R, error) error
	prefix  string

	// observer, when not nil, is told of each decision: see decide.
	observer ratelimit.Observer
	backend  string
	origin   ratelimit.OriginReporter
}

// ShadowPrefix starts the key of every bucket a middleware in shadow mode uses, so that
// shadow buckets never share a bucket with enforced ones.
const ShadowPrefix = "shadow|"

// New returns the pipeline of a middleware whose errors begin with prefix ("ginmw: "),
// after settling what o leaves to it (shadow mode's header style), so that the middleware
// reads the same options. onError is told about key and limiter failures and returns nil
// to let the pipeline go on, or an error when it has ended the request itself. New fails
// on a configuration that cannot work: a nil limiter, no limit, or a fixed limit that is
// neither zero nor accepted by l.
func New[R any](prefix string, l ratelimit.Limiter, o *Options[R], onError func(R, error) error) (*Pipeline[R], error) {
	if l == nil {
		return nil, errors.New("nil Limiter")
	}
	if o.Limit == nil && o.Limits == nil {
		return nil, ErrNoLimit
	}
	if _, ok := l.(ratelimit.MultiLimiter); o.Limits != nil && !ok {
		return nil, fmt.Errorf("WithLimits: %T does not decide several limits at once (ratelimit.MultiLimiter)", l)
	}
	if _, ok := l.(ratelimit.Inspector); o.Refund != nil && !ok {
		return nil, fmt.Errorf("WithRefundIf: %T cannot refund (ratelimit.Inspector)", l)
	}
	if err := o.check(l); err != nil {
		return nil, err
	}
	if o.Shadow && !o.styleSet {
		o.Style = headers.StyleNone
	}
	p := &Pipeline[R]{limiter: l, opts: *o, onError: onError, prefix: prefix}
	if p.observer = ratelimit.Observers(o.Observer); p.observer != nil {
		p.backend = ratelimit.BackendName(l)
		p.origin, _ = l.(ratelimit.OriginReporter)
	}
	return p, nil
}

// Decide decides whether r, whose context is ctx, may proceed, taking its cost from its
// bucket if so. A shaper's delay is served before Decide returns.
func (p *Pipeline[R]) Decide(ctx context.Context, r R) Decision {
	if p.opts.Limits != nil {
		return p.decideAll(ctx, r)
	}
	d, ok := p.prepare(r)
	if !ok {
		return d
	}
	n := 1
	if p.opts.Cost != nil {
		n = p.opts.Cost(r)
	}
	d.Cost = n
	ctx = p.withPriority(ctx, r)
	res, err := p.decide(ctx, d.Key, d.Limit, n)
	if p.opts.Shadow {
		return p.shadow(ctx, d, res, err)
	}
	if err != nil {
		return p.fail(ctx, r, d, err)
	}
	d.Decided, d.Result, d.Charged = true, res, res.Allowed
	return p.verdict(ctx, d)
}

// withPriority returns ctx carrying r's priority, when the middleware gives requests one
// (WithPriorityFunc); ctx as it is otherwise, and when it carries that priority already
// (Critical, for a context that carries none), which costs no allocation.
func (p *Pipeline[R]) withPriority(ctx context.Context, r R) context.Context {
	if p.opts.Priority == nil {
		return ctx
	}
	return ratelimit.WithPriority(ctx, p.opts.Priority(r))
}

// verdict is the verdict of a decision the limiter made: deny, or hold for a shaper's delay
// and proceed.
func (p *Pipeline[R]) verdict(ctx context.Context, d Decision) Decision {
	if !d.Result.Allowed {
		d.Verdict = Deny
		return d
	}
	if err := wait.Hold(ctx, d.Result.Delay, nil); err != nil {
		d.Verdict, d.Err = Ended, err
	}
	return d
}

// decideAll decides a request's several limits at once (WithLimits).
func (p *Pipeline[R]) decideAll(ctx context.Context, r R) Decision {
	var d Decision
	if p.opts.Skip != nil && p.opts.Skip(r) {
		return d
	}
	reqs := p.opts.Limits(r)
	if len(reqs) == 0 {
		return d
	}
	if p.opts.Shadow {
		shadow := make([]ratelimit.Request, len(reqs))
		for i, q := range reqs {
			q.Key = ShadowPrefix + q.Key
			shadow[i] = q
		}
		reqs = shadow
	}
	d.Reqs = reqs
	ctx = p.withPriority(ctx, r)
	var start time.Time
	if p.observer != nil {
		start = time.Now()
	}
	mr, err := p.limiter.(ratelimit.MultiLimiter).AllowAll(ctx, reqs)
	if p.observer != nil {
		p.observeAll(ctx, reqs, mr, err, time.Since(start))
	}
	d.Multi = mr
	if b := mr.Binding; b >= 0 && b < len(reqs) {
		d.Key, d.Limit = reqs[b].Key, reqs[b].Limit
		if b < len(mr.Results) {
			d.Result = mr.Results[b]
		}
	}
	if p.opts.Shadow {
		return p.shadow(ctx, d, d.Result, err)
	}
	if err != nil {
		return p.fail(ctx, r, d, err)
	}
	d.Decided, d.Charged = true, mr.Allowed
	d.Result.Allowed = mr.Allowed
	if !mr.Allowed {
		d.Result.RetryAfter = mr.RetryAfter
	}
	return p.verdict(ctx, d)
}

// observeAll tells the observer of each limit of a decision over several: what AllowN alone
// would have said of it, under its name.
func (p *Pipeline[R]) observeAll(ctx context.Context, reqs []ratelimit.Request, mr ratelimit.MultiResult, err error, took time.Duration) {
	for i, q := range reqs {
		if q.Limit.IsZero() {
			continue
		}
		od := ratelimit.Decision{Policy: q.Name, Backend: p.backend, Shadow: p.opts.Shadow,
			Cost: max(q.N, 1), Priority: ratelimit.PriorityFrom(ctx), Limit: q.Limit, Duration: took}
		if od.Policy == "" {
			od.Policy = p.opts.PolicyName
		}
		var res ratelimit.Result
		if i < len(mr.Results) {
			res = mr.Results[i]
		}
		od.SetOutcome(ctx, res, err)
		p.observer.ObserveDecision(ctx, od)
	}
}

// Refund gives back the tokens d took when the middleware's refund function (WithRefundIf)
// says so of r, after the handler ran. The refund outlives r's context, within the
// limiter's own deadline; its errors go to the error handler.
func (p *Pipeline[R]) Refund(ctx context.Context, r R, d Decision) {
	if p.opts.Refund == nil || !d.Charged || !p.opts.Refund(r) {
		return
	}
	ins := p.limiter.(ratelimit.Inspector)
	ctx = context.WithoutCancel(ctx)
	var err error
	if d.Reqs == nil {
		_, err = ins.Refund(ctx, d.Key, d.Limit, d.Cost, d.Result.Charge)
	} else {
		for i, q := range d.Reqs {
			if !q.Limit.IsZero() {
				if _, e := ins.Refund(ctx, q.Key, q.Limit, max(q.N, 1), d.Multi.Results[i].Charge); e != nil && err == nil {
					err = e
				}
			}
		}
	}
	if err != nil {
		_ = p.onError(r, fmt.Errorf("%srefund: %w", p.prefix, err))
	}
}

// decide asks the limiter, and tells the observer when there is one.
func (p *Pipeline[R]) decide(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	if p.observer == nil {
		return p.limiter.AllowN(ctx, key, limit, n)
	}
	start := time.Now()
	var res ratelimit.Result
	var origin ratelimit.Origin
	var err error
	if p.origin != nil {
		res, origin, err = p.origin.AllowNOrigin(ctx, key, limit, n)
	} else {
		res, err = p.limiter.AllowN(ctx, key, limit, n)
	}
	od := ratelimit.Decision{
		Policy: p.opts.PolicyName, Backend: p.backend, Shadow: p.opts.Shadow,
		Cost: n, Priority: ratelimit.PriorityFrom(ctx), Limit: limit, Duration: time.Since(start),
		Cached: origin.Cached,
	}
	if origin.Backend != "" {
		od.Backend = origin.Backend
	}
	od.SetOutcome(ctx, res, err)
	p.observer.ObserveDecision(ctx, od)
	return res, err
}

// shadow is the verdict of shadow mode: every request proceeds, unless its own context has
// ended, whatever the limiter said; the rate-limit headers, when asked for, report the
// decision but never a Retry-After.
func (p *Pipeline[R]) shadow(ctx context.Context, d Decision, res ratelimit.Result, err error) Decision {
	if err != nil {
		if ctx.Err() != nil {
			d.Verdict, d.Err = Ended, ctx.Err()
		}
		return d
	}
	res.Allowed, res.RetryAfter, res.Delay = true, 0, 0
	d.Decided, d.Result = true, res
	return d
}

// Wait waits, with Limiter.Wait, until r may proceed. A deadline that comes before the
// turn ends r as its context's end would.
func (p *Pipeline[R]) Wait(ctx context.Context, r R) Decision {
	d, ok := p.prepare(r)
	if !ok {
		return d
	}
	err := p.limiter.Wait(p.withPriority(ctx, r), d.Key, d.Limit)
	switch {
	case err == nil:
		return d
	case ctx.Err() != nil:
		d.Verdict, d.Err = Ended, ctx.Err()
		return d
	case errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ratelimit.ErrTimeout):
		if _, ok := ctx.Deadline(); ok {
			d.Verdict, d.Err = Ended, err
			return d
		}
	}
	return p.fail(ctx, r, d, err)
}

// prepare finds r's limit and key; ok is false when the decision is already made.
func (p *Pipeline[R]) prepare(r R) (d Decision, ok bool) {
	if p.opts.Skip != nil && p.opts.Skip(r) {
		return d, false
	}
	d.Limit = p.opts.Limit(r)
	if d.Limit.IsZero() {
		return d, false
	}
	key, err := p.opts.Key(r)
	if err == nil {
		err = checkKey(key, p.opts.Shadow)
	}
	if err != nil {
		if herr := p.onError(r, fmt.Errorf("%sno key, limiting as %q: %w", p.prefix, UnkeyedKey, err)); herr != nil {
			d.Verdict, d.Err = Handled, herr
			return d, false
		}
		key = UnkeyedKey
	}
	if p.opts.Shadow {
		key = ShadowPrefix + key
	}
	d.Key = key
	return d, true
}

// checkKey returns the error a limiter would return for key (with ShadowPrefix before it,
// in shadow mode), or nil.
func checkKey(key string, shadow bool) error {
	n := len(key)
	if shadow {
		n += len(ShadowPrefix)
	}
	switch {
	case key == "":
		return ratelimit.ErrKeyEmpty
	case n > ratelimit.MaxKeyLen:
		return fmt.Errorf("%w: %d bytes", ratelimit.ErrKeyTooLong, n)
	}
	return nil
}

// fail turns a limiter error into a verdict. A request whose own context has ended is
// ended, whatever the error: the limiter's failure to answer a request nobody waits for
// says nothing of its health, and failing open would run the handler for nobody.
func (p *Pipeline[R]) fail(ctx context.Context, r R, d Decision, err error) Decision {
	d.Err = err
	if ctx.Err() != nil {
		d.Verdict, d.Err = Ended, ctx.Err()
		return d
	}
	if herr := p.onError(r, fmt.Errorf("%s%w", p.prefix, err)); herr != nil {
		d.Verdict, d.Err = Handled, herr
		return d
	}
	switch {
	case errors.Is(err, ratelimit.ErrExceedsBurst):
		d.Verdict = TooCostly
	case IsArgumentError(err):
		d.Verdict = Invalid
	case p.opts.Policy == ratelimit.FailClosed:
		d.Verdict = Unavailable
	default:
		d.Verdict = Proceed
	}
	return d
}

// IsArgumentError reports whether err says the limiter was asked something it can never
// answer (a cost below 1, a limit it rejects, an operation it lacks), rather than that it
// failed to answer.
func IsArgumentError(err error) bool {
	return errors.Is(err, ratelimit.ErrInvalidCost) || errors.Is(err, ratelimit.ErrInvalidLimit) ||
		errors.Is(err, ratelimit.ErrKeyEmpty) || errors.Is(err, ratelimit.ErrKeyTooLong) ||
		errors.Is(err, ratelimit.ErrNotSupported)
}

// The messages of the middlewares' answers, the same in every framework. They name no key,
// which may be personal data.
const (
	MsgDenied      = "rate limit exceeded"
	MsgTooCostly   = "request cost exceeds the rate limit"
	MsgInvalid     = "rate limit misconfigured"
	MsgUnavailable = "rate limiter unavailable"
)

// DeniedBody is the JSON body of an HTTP denial: {"error":"rate limit exceeded",
// "retry_after":N}, N being Retry-After in seconds.
type DeniedBody struct {
	Error      string `json:"error"`
	RetryAfter int64  `json:"retry_after"`
}

// ErrorBody is the JSON body of the other HTTP answers: {"error":"…"}.
type ErrorBody struct {
	Error string `json:"error"`
}
