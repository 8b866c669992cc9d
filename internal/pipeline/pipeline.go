// Package pipeline is the one request pipeline of the middlewares (ginmw, httpmw, grpcmw):
// skip, limit, key, cost, priority, decide, error policy, hold for a shaper's delay. It knows no
// framework: each middleware supplies how to read its request (the functions of Options,
// over its request type R) and turns the Decision into its framework's answer.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/internal/wait"
	"github.com/sluice-go/ratelimit/observe"
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
	observer observe.Observer
	backend  string
	origin   observe.OriginReporter

	// shadowResume is when shadow decisions resume after a backend failure, in nanoseconds
	// since epoch on the monotonic clock: see ShadowPause.
	shadowResume atomic.Int64
	epoch        time.Time
}

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
	if isNil(l) {
		return nil, errors.New("nil Limiter")
	}
	if err := o.conflicts(); err != nil {
		return nil, err
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
	p := &Pipeline[R]{limiter: l, opts: *o, onError: onError, prefix: prefix, epoch: time.Now()}
	if p.observer = observe.Join(o.Observer); p.observer != nil {
		p.backend = observe.BackendName(l)
		p.origin, _ = l.(observe.OriginReporter)
	}
	return p, nil
}

// isNil reports whether l is nil, or an interface holding a nil pointer (a *local.Limiter
// never built, say), which would fail on the first request rather than at start-up.
func isNil(l ratelimit.Limiter) bool {
	if l == nil {
		return true
	}
	switch v := reflect.ValueOf(l); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Chan, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
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
	if p.opts.Shadow {
		if p.pausedShadow() {
			return Decision{}
		}
		sctx, cancel := context.WithTimeout(ctx, ShadowBudget)
		res, err := p.decide(sctx, ctx, d.Key, d.Limit, n)
		cancel()
		p.pauseShadowOn(ctx, err)
		return p.shadow(ctx, d, res, err)
	}
	res, err := p.decide(ctx, ctx, d.Key, d.Limit, n)
	if err != nil {
		return p.fail(ctx, r, d, err)
	}
	d.Decided, d.Result, d.Charged = true, res, res.Allowed
	return p.verdict(ctx, d)
}

// pausedShadow reports whether shadow decisions are paused after a backend failure.
func (p *Pipeline[R]) pausedShadow() bool {
	resume := p.shadowResume.Load()
	return resume != 0 && int64(time.Since(p.epoch)) < resume
}

// pauseShadowOn pauses shadow decisions for ShadowPause when err says the backend failed
// (not the caller, not the arguments).
func (p *Pipeline[R]) pauseShadowOn(rctx context.Context, err error) {
	if err == nil {
		return
	}
	switch observe.Classify(rctx, err) {
	case observe.KindTimeout, observe.KindUnavailable:
		p.shadowResume.Store(int64(time.Since(p.epoch) + ShadowPause))
	}
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

// decideAll decides a request's several limits at once (WithLimits). A missing key is
// limited under UnkeyedKey and reported, as for one limit; an entry without a name takes
// the middleware's policy name (WithPolicyName).
func (p *Pipeline[R]) decideAll(ctx context.Context, r R) Decision {
	var d Decision
	if p.opts.Skip != nil && p.opts.Skip(r) {
		return d
	}
	reqs := p.opts.Limits(r)
	if len(reqs) == 0 {
		return d
	}
	reqs, herr := p.settle(r, reqs)
	if herr != nil {
		d.Verdict, d.Err = Handled, herr
		return d
	}
	d.Reqs = reqs
	ctx = p.withPriority(ctx, r)
	rctx := ctx
	if p.opts.Shadow {
		if p.pausedShadow() {
			return Decision{}
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ShadowBudget)
		defer cancel()
	}
	var (
		mr     ratelimit.MultiResult
		origin observe.Origin
		err    error
	)
	switch {
	case p.observer == nil:
		mr, err = p.limiter.(ratelimit.MultiLimiter).AllowAll(ctx, reqs)
	default:
		start := time.Now()
		if p.origin != nil {
			mr, origin, err = p.origin.AllowAllOrigin(ctx, reqs)
		} else {
			mr, err = p.limiter.(ratelimit.MultiLimiter).AllowAll(ctx, reqs)
		}
		observe.ReportAll(rctx, p.observer, p.call(origin, start), reqs, mr, err)
	}
	d.Multi = mr
	if b := mr.Binding; b >= 0 && b < len(reqs) {
		d.Key, d.Limit = reqs[b].Key, reqs[b].Limit
		if b < len(mr.Results) {
			d.Result = mr.Results[b]
		}
	}
	if p.opts.Shadow {
		p.pauseShadowOn(rctx, err)
		return p.shadow(rctx, d, d.Result, err)
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

// settle returns reqs as the limiter is to be asked them: in shadow mode under
// ShadowPrefix, a key the limiter cannot take replaced by UnkeyedKey (reported to the error
// handler once per request, which may end the request: herr), an empty name by the
// policy's name when WithPolicyName set one. It copies reqs only when it changes one.
func (p *Pipeline[R]) settle(r R, reqs []ratelimit.Request) (_ []ratelimit.Request, herr error) {
	named := p.opts.PolicyName != headers.DefaultPolicyName
	owned, reported := false, false
	for i, q := range reqs {
		if q.Limit.IsZero() {
			continue
		}
		keyErr := checkKey(q.Key, p.opts.Shadow)
		if keyErr == nil && !p.opts.Shadow && (q.Name != "" || !named) {
			continue
		}
		if !owned {
			reqs, owned = slices.Clone(reqs), true
		}
		if keyErr != nil {
			if !reported {
				reported = true
				if herr = p.onError(r, fmt.Errorf("%sno key for limit %d (%s), limiting as %q: %w",
					p.prefix, i, nameOf(q), UnkeyedKey, keyErr)); herr != nil {
					return reqs, herr
				}
			}
			q.Key = UnkeyedKey
		}
		if q.Name == "" && named {
			q.Name = p.opts.PolicyName
		}
		if p.opts.Shadow {
			q.Key = ShadowPrefix + q.Key
		}
		reqs[i] = q
	}
	return reqs, nil
}

// nameOf returns q's policy name as headers and metrics give it.
func nameOf(q ratelimit.Request) string {
	if q.Name == "" {
		return headers.DefaultPolicyName
	}
	return q.Name
}

// call is what the report of a decision the limiter made since start, with origin,
// takes from the middleware.
func (p *Pipeline[R]) call(origin observe.Origin, start time.Time) observe.Call {
	return observe.Call{
		Policy: p.opts.PolicyName, Backend: p.backend, Origin: origin, Shadow: p.opts.Shadow,
		Duration: time.Since(start),
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

// decide asks the limiter with ctx, and tells the observer when there is one; rctx is the
// request's own context, which says whether an error is the caller's (ctx may be rctx with a
// shorter deadline: see ShadowBudget).
func (p *Pipeline[R]) decide(ctx, rctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	if p.observer == nil {
		return p.limiter.AllowN(ctx, key, limit, n)
	}
	start := time.Now()
	var res ratelimit.Result
	var origin observe.Origin
	var err error
	if p.origin != nil {
		res, origin, err = p.origin.AllowNOrigin(ctx, key, limit, n)
	} else {
		res, err = p.limiter.AllowN(ctx, key, limit, n)
	}
	observe.Report(rctx, p.observer, p.call(origin, start), limit, n, res, err)
	return res, err
}

// shadow is the verdict of shadow mode: every request proceeds, unless its own context has
// ended, whatever the limiter said; the rate-limit headers, when asked for, report the
// decision but never a Retry-After.
//
// A shadow decision that admitted took tokens from its shadow buckets, as an enforced one
// would: Charged is set, so that WithRefundIf gives them back and the shadow buckets count
// what enforcement would have counted.
func (p *Pipeline[R]) shadow(ctx context.Context, d Decision, res ratelimit.Result, err error) Decision {
	if err != nil {
		if ctx.Err() != nil {
			d.Verdict, d.Err = Ended, ctx.Err()
		}
		return d
	}
	d.Charged = res.Allowed
	if d.Reqs != nil {
		d.Charged = d.Multi.Allowed
		d.Multi.Allowed, d.Multi.RetryAfter = true, 0
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
// answer (a cost below 1, a limit it rejects, an operation it lacks, a list of limits it
// cannot decide as a whole), rather than that it failed to answer: observe.Classify's
// KindInvalidInput, the one list of such errors.
func IsArgumentError(err error) bool {
	return observe.Classify(nil, err) == observe.KindInvalidInput
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
