package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/internal/bucket"
	"github.com/sluice-go/ratelimit/internal/wait"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/rules"
)

// Decide decides whether r, whose context is ctx, may proceed, taking its cost from its
// buckets if so. A shaper's delay is served before Decide returns.
//
// One limit and several (WithLimits) take the same path: prepare finds the limits, keys,
// costs and policies; ask asks the limiter (AllowN for one, AllowAll for several) and
// reports to the observer; shadow mode, the error policy and the verdict read the answer
// alike.
//
// The decision is made in *d, which must be zero: a Decision is a few hundred bytes, which
// every step of the pipeline would copy if it were passed by value.
func (p *Pipeline[R]) Decide(ctx context.Context, r R, d *Decision) {
	if p.opts.Skip != nil && p.opts.Skip(r) {
		return
	}
	if p.opts.Rules != nil {
		p.decideRules(ctx, r, d)
		return
	}
	if p.limiter != nil {
		p.decideRate(ctx, r, d)
	}
	if p.opts.Concurrency != nil && d.Verdict == Proceed {
		p.acquire(ctx, r, d, p.opts.Concurrency, p.opts.InFlight(r))
	}
}

// decideRules is Decide under the rules in force (WithRules): the request's policy, found
// once in one set, gives its limits, key, cost, priority, shadow mode and concurrency.
func (p *Pipeline[R]) decideRules(ctx context.Context, r R, d *Decision) {
	set := p.opts.Rules.Set()
	if set == nil {
		return
	}
	req := p.opts.RulesRequest(r)
	pol := set.Match(req)
	if pol == nil {
		return
	}
	d.Policy, d.Cost, d.Shadow = pol.Name, max(pol.Cost, 1), p.opts.Shadow || pol.Shadow
	if !p.policyKey(r, req, pol, d) {
		return
	}
	switch len(pol.Limits) {
	case 0:
	case 1:
		d.Limit = pol.Limits[0]
		if d.bucket == "" {
			d.bucket = bucket.Name{Policy: pol.Name, Shadow: d.Shadow}.Key(d.Key)
		}
	default:
		d.Reqs = make([]ratelimit.Request, len(pol.Limits))
		for i, l := range pol.Limits {
			// Each limit with KeepUsage after the first has a bucket key of its own.
			key := d.bucket
			if i > 0 || key == "" {
				key = bucket.Name{Policy: pol.Name, Limit: i, Keep: l.KeepUsage, Shadow: d.Shadow}.Key(d.Key)
			}
			d.Reqs[i] = ratelimit.Request{Key: key, Limit: l, N: pol.Cost, Name: pol.Name}
		}
		d.bucket = ""
	}
	if len(pol.Limits) > 0 {
		// The policy's priority wins over WithPriorityFunc's, which is not asked then.
		var pctx context.Context
		if pol.HasPriority {
			pctx = ratelimit.WithPriority(ctx, pol.Priority)
		} else {
			pctx = p.withPriority(ctx, r)
		}
		p.decideLimits(pctx, r, d)
	}
	// The policy's concurrency wins over WithConcurrency's max, which is asked only for a
	// policy without one. Shadow mode decides rate limits only: a permit would be held for
	// real.
	if p.opts.Concurrency == nil || d.Shadow || d.Verdict != Proceed {
		return
	}
	n := pol.Concurrency
	if n == 0 {
		n = p.opts.InFlight(r)
	}
	if n > 0 {
		p.acquire(ctx, r, d, p.opts.Concurrency, n)
	}
}

// policyKey sets d.Key to r's key under pol: the value of its key function, or the
// middleware's own key for a policy that names none (then with d.bucket, its bucket key,
// when one allocation builds both: see bucketOfParts). A key that cannot be found is
// UnkeyedKey, reported to the error handler; ok is false when the handler ended r.
func (p *Pipeline[R]) policyKey(r R, req rules.Request, pol *rules.Policy, d *Decision) (ok bool) {
	if pol.Key == "" {
		return p.bucketOfParts(r, d) || p.key(r, d)
	}
	key, err := pol.KeyOf(req)
	if err == nil {
		err = checkKey(bucket.Name{Policy: pol.Name, Shadow: d.Shadow}, key)
	}
	if err != nil {
		if herr := p.onError(r, fmt.Errorf("%sno key (%s), limiting as %q: %w", p.prefix, pol.Name, UnkeyedKey, err)); herr != nil {
			d.Verdict, d.Err = Handled, herr
			return false
		}
		key = UnkeyedKey
	}
	d.Key = key
	return true
}

// decideRate is Decide's rate limit.
func (p *Pipeline[R]) decideRate(ctx context.Context, r R, d *Decision) {
	if !p.prepare(r, d) {
		return
	}
	if d.Reqs == nil {
		d.Cost = 1
		if p.opts.Cost != nil {
			d.Cost = p.opts.Cost(r)
		}
	}
	p.decideLimits(p.withPriority(ctx, r), r, d)
}

// decideLimits asks the limiter about d, prepared, with ctx, the request's context with
// its priority, and reads the answer: shadow mode, the error policy, the verdict.
func (p *Pipeline[R]) decideLimits(ctx context.Context, r R, d *Decision) {
	if d.Shadow {
		if p.pausedShadow() {
			*d = Decision{}
			return
		}
		sctx, cancel := context.WithTimeout(ctx, p.shadowBudget)
		err := p.ask(sctx, ctx, d)
		cancel()
		p.pauseShadowOn(ctx, err)
		p.shadow(ctx, d, err)
		return
	}
	if err := p.ask(ctx, ctx, d); err != nil {
		p.fail(ctx, r, d, err)
		return
	}
	d.Decided, d.Charged = true, d.Result.Allowed
	p.verdict(ctx, d)
}

// prepare finds r's limits, keys, costs and policies, in d; ok is false when the decision
// is already made: r is not limited, or ended by the error handler.
func (p *Pipeline[R]) prepare(r R, d *Decision) (ok bool) {
	if p.opts.Limits != nil {
		return p.prepareAll(r, d)
	}
	d.Shadow = p.opts.Shadow
	d.Limit, d.Policy = p.opts.Limit(r)
	if math.IsInf(d.Limit.Rate, 1) && d.Limit == ratelimit.Unlimited {
		d.Limit, d.Policy = ratelimit.Limit{}, ""
		return false
	}
	if d.Limit.IsZero() {
		if p.opts.zeroFromFunc && !p.zeroReported.Load() {
			p.reportZero(r, d)
		}
		return false
	}
	if d.Policy == "" {
		d.Policy = p.opts.PolicyName
	}
	if p.bucketOfParts(r, d) {
		return true
	}
	if !p.key(r, d) {
		return false
	}
	d.bucket = bucket.Name{Policy: d.Policy, Shadow: d.Shadow}.Key(d.Key)
	return true
}

// reportZero tells the error handler, once in the pipeline's life, that WithLimitFunc's
// function returned the zero Limit for r: the request is not limited, as before, and the
// mistake is seen without a report per request. The error handler may end r.
func (p *Pipeline[R]) reportZero(r R, d *Decision) {
	if !p.zeroReported.CompareAndSwap(false, true) {
		return
	}
	if herr := p.onError(r, fmt.Errorf("%s%w", p.prefix, ErrZeroFromFunc)); herr != nil {
		d.Verdict, d.Err = Handled, herr
	}
}

// bucketOfParts sets d.Key and d.bucket from the parts of r's default key (KeyParts), with
// the one allocation of the bucket key: the key is the bucket key's tail. It returns false,
// leaving the key to key, when there are no parts for r, or when their key is one the
// limiter cannot take (key reports it).
func (p *Pipeline[R]) bucketOfParts(r R, d *Decision) bool {
	if p.opts.KeyParts == nil || p.opts.keyBy != "" {
		return false
	}
	prefix, value, ok := p.opts.KeyParts(r)
	n := len(prefix) + len(value)
	name := bucket.Name{Policy: d.Policy, Shadow: d.Shadow}
	if !ok || n == 0 || checkKeyLen(name, n) != nil {
		return false
	}
	d.bucket = name.KeyOfParts(prefix, value)
	d.Key = d.bucket[len(d.bucket)-n:]
	return true
}

// key sets d.Key to r's key under d.Policy, or UnkeyedKey when the key function fails or
// gives a key the limiter cannot take (reported to the error handler); ok is false when
// the error handler ended r.
func (p *Pipeline[R]) key(r R, d *Decision) (ok bool) {
	key, err := p.opts.Key(r)
	if err == nil {
		err = checkKey(bucket.Name{Policy: d.Policy, Shadow: d.Shadow}, key)
	}
	if err != nil {
		if herr := p.onError(r, fmt.Errorf("%sno key, limiting as %q: %w", p.prefix, UnkeyedKey, err)); herr != nil {
			d.Verdict, d.Err = Handled, herr
			return false
		}
		key = UnkeyedKey
	}
	d.Key = key
	return true
}

// acquire gives r, which the rate limit let through, its permit to run (WithConcurrency, or
// its policy's concurrency: at most max of its key under l), waiting as l's queue allows,
// within r's context: the permit is in
// d.Permit, for the middleware to release when the handler returns. A request that finds
// no room is Busy; a failure of the limiter goes to the error policy as a rate limiter's
// does, and a request that proceeds under FailOpen holds no permit.
func (p *Pipeline[R]) acquire(ctx context.Context, r R, d *Decision, l concurrency.Limiter, max int) {
	if max == 0 {
		return // not limited
	}
	if d.Key == "" { // no rate limit decided r: its key is found here
		d.Policy = p.opts.PolicyName
		if !p.key(r, d) {
			return
		}
	}
	// A permit is always timed (its wait is what a concurrency limit's observer watches),
	// with readings of the monotonic clock only.
	var start time.Duration
	if p.observer != nil {
		start = time.Since(p.epoch)
	}
	permit, err := l.Acquire(ctx, bucket.Name{Policy: d.Policy}.Key(d.Key), max)
	took := time.Since(p.epoch) - start
	switch {
	case err == nil:
		d.Permit = permit
	case ctx.Err() != nil:
		d.Verdict, d.Err = Ended, ctx.Err()
	case errors.Is(err, concurrency.ErrQueueFull):
		d.Verdict, d.Err = Busy, err
	default:
		p.fail(ctx, r, d, err)
	}
	if p.observer != nil {
		p.reportPermit(ctx, r, d.Policy, err, took, err != nil && d.Verdict == Proceed)
	}
	if d.Verdict != Proceed && d.Charged {
		// The request never runs: its rate-limit charge is given back, so that refusals for
		// lack of a permit do not spend the key's quota.
		p.giveBack(ctx, r, d)
	}
}

// prepareAll is prepare for several limits (WithLimits). Each entry is settled as one limit
// is: a key the limiter cannot take is replaced by UnkeyedKey (reported to the error handler
// once per request), a missing name by the policy's name (WithPolicyName), and the key by
// the bucket key of the entry's policy. The entries are copied, never changed in place.
func (p *Pipeline[R]) prepareAll(r R, d *Decision) (ok bool) {
	given := p.opts.Limits(r)
	reqs := make([]ratelimit.Request, 0, len(given))
	d.Shadow = p.opts.Shadow
	reported := false
	for i, q := range given {
		if math.IsInf(q.Limit.Rate, 1) && q.Limit == ratelimit.Unlimited {
			q.Limit = ratelimit.Limit{} // an entry skipped, as the zero Limit is
		}
		if !q.Limit.IsZero() {
			if q.Name == "" {
				q.Name = p.opts.PolicyName
			}
			if err := checkName(q.Name); err != nil {
				// A mistake of the program, refused as one whatever the error policy.
				err = fmt.Errorf("%w: limit %d: %w", ratelimit.ErrInvalidRequest, i, err)
				d.Verdict, d.Err = Invalid, err
				if herr := p.onError(r, fmt.Errorf("%s%w", p.prefix, err)); herr != nil {
					d.Verdict, d.Err = Handled, herr
				}
				return false
			}
			index := 0 // among the entries of q's policy
			for _, e := range reqs {
				if e.Name == q.Name && !e.Limit.IsZero() {
					index++
				}
			}
			name := bucket.Name{Policy: q.Name, Limit: index, Keep: q.Limit.KeepUsage, Shadow: d.Shadow}
			err := checkKey(name, q.Key)
			if err != nil && !reported {
				reported = true
				if herr := p.onError(r, fmt.Errorf("%sno key for limit %d (%s), limiting as %q: %w",
					p.prefix, i, q.Name, UnkeyedKey, err)); herr != nil {
					d.Verdict, d.Err = Handled, herr
					return false
				}
			}
			if err != nil {
				q.Key = UnkeyedKey
			}
			q.Key = name.Key(q.Key)
		}
		reqs = append(reqs, q)
	}
	for _, q := range reqs {
		if !q.Limit.IsZero() {
			d.Reqs = reqs
			return true
		}
	}
	return false // no limit at all
}

// ask asks the limiter with ctx, fills d with its answer, tells the observer, and returns
// the limiter's error. rctx is the request's own context, which says whether an error is
// the caller's (ctx may be rctx with a shorter deadline: see ShadowBudget).
func (p *Pipeline[R]) ask(ctx, rctx context.Context, d *Decision) error {
	var (
		origin observe.Origin
		err    error
		start  time.Duration
	)
	if p.observer != nil {
		start = p.clock.Start()
	}
	switch {
	case d.Reqs != nil:
		if p.observer != nil && p.origin != nil {
			d.Multi, origin, err = p.origin.AllowAllOrigin(ctx, d.Reqs)
		} else {
			d.Multi, err = p.multi.AllowAll(ctx, d.Reqs)
		}
		d.bind()
	case p.observer != nil && p.origin != nil:
		d.Result, origin, err = p.origin.AllowNOrigin(ctx, d.bucket, d.Limit, d.Cost)
	default:
		d.Result, err = p.limiter.AllowN(ctx, d.bucket, d.Limit, d.Cost)
	}
	if p.observer != nil {
		p.report(rctx, d, origin, err, p.clock.Stop(start))
	}
	return err
}

// bind sets d's binding limit from its decision over several: the Result headers report,
// with Allowed and RetryAfter those of the request as a whole.
func (d *Decision) bind() {
	b := d.Multi.Binding
	if b < 0 || b >= len(d.Reqs) {
		return
	}
	q := d.Reqs[b]
	d.Key, d.Limit, d.Policy, d.Cost = bucket.KeyOf(q.Key), q.Limit, q.Name, max(q.N, 1)
	if b < len(d.Multi.Results) {
		d.Result = d.Multi.Results[b]
	}
	d.Result.Allowed = d.Multi.Allowed
	if !d.Multi.Allowed {
		d.Result.RetryAfter = d.Multi.RetryAfter
	}
}

// reportPermit tells the observer of a concurrency limit's decision (see
// observe.Decision.Concurrency): a permit granted, refused (err wraps ErrQueueFull) or not
// decided, in took; unpermitted when the request runs without a permit all the same.
func (p *Pipeline[R]) reportPermit(ctx context.Context, r R, policy string, err error, took time.Duration, unpermitted bool) {
	d := observe.Decision{Policy: policy, Backend: p.permitBackend, Cost: 1, Duration: took, Concurrency: true,
		Priority: ratelimit.PriorityFrom(p.withPriority(ctx, r)), Unpermitted: unpermitted}
	switch {
	case err == nil:
		d.Outcome = observe.OutcomeAllowed
	case errors.Is(err, concurrency.ErrQueueFull):
		d.Outcome = observe.OutcomeDenied
	default:
		d.Outcome, d.Err, d.ErrorKind = observe.OutcomeError, err, observe.Classify(ctx, err)
	}
	p.observer.ObserveDecision(ctx, d)
}

// report tells the observer of d, decided in took (negative when not timed: see
// observe.Stopwatch): one report per limit, under its policy's name (observe.Report,
// observe.ReportAll).
func (p *Pipeline[R]) report(ctx context.Context, d *Decision, origin observe.Origin, err error, took time.Duration) {
	c := observe.Call{Policy: d.Policy, Backend: p.backend, Origin: origin, Shadow: d.Shadow, Duration: took}
	if d.Reqs == nil {
		observe.Report(ctx, p.observer, c, d.Limit, d.Cost, d.Result, err)
		return
	}
	observe.ReportAll(ctx, p.observer, c, d.Reqs, d.Multi, err)
}

// shadow is the verdict of shadow mode: every request proceeds, unless its own context has
// ended, whatever the limiter said; the rate-limit headers, when asked for, report the
// decision but never a Retry-After.
//
// A shadow decision that admitted took tokens from its shadow buckets, as an enforced one
// would: Charged is set, so that WithRefundIf gives them back and the shadow buckets count
// what enforcement would have counted.
func (p *Pipeline[R]) shadow(ctx context.Context, d *Decision, err error) {
	if err != nil {
		if ctx.Err() != nil {
			d.Verdict, d.Err = Ended, ctx.Err()
		}
		return
	}
	d.Decided, d.Charged = true, d.Result.Allowed
	d.Result.Allowed, d.Result.RetryAfter, d.Result.Delay = true, 0, 0
	d.Multi.Allowed, d.Multi.RetryAfter = true, 0
}

// verdict is the verdict of a decision the limiter made: deny, or hold for a shaper's delay
// and proceed.
func (p *Pipeline[R]) verdict(ctx context.Context, d *Decision) {
	if !d.Result.Allowed {
		d.Verdict = Deny
		return
	}
	if err := wait.Hold(ctx, d.Result.Delay, nil); err != nil {
		d.Verdict, d.Err = Ended, err
	}
}

// Refund gives back the tokens d took when the middleware's refund function (WithRefundIf)
// says so of r, after the handler ran: to each bucket the decision charged, with the
// decision's Charge, so that a refund goes where the tokens were taken or nowhere. The
// refund outlives r's context, within the limiter's own deadline; its errors go to the
// error handler.
func (p *Pipeline[R]) Refund(ctx context.Context, r R, d *Decision) {
	if p.opts.Refund == nil || !d.Charged || !p.opts.Refund(r) {
		return
	}
	p.giveBack(ctx, r, d)
}

// giveBack refunds what d charged, when the limiter can refund (an Inspector), and marks d
// uncharged so that nothing is given back twice.
func (p *Pipeline[R]) giveBack(ctx context.Context, r R, d *Decision) {
	ins := p.inspector
	if ins == nil {
		return
	}
	d.Charged = false
	ctx = context.WithoutCancel(ctx)
	var err error
	if d.Reqs == nil {
		_, err = ins.Refund(ctx, d.bucket, d.Limit, d.Cost, d.Result.Charge)
	}
	for i, q := range d.Reqs {
		if q.Limit.IsZero() || i >= len(d.Multi.Results) {
			continue
		}
		if _, e := ins.Refund(ctx, q.Key, q.Limit, max(q.N, 1), d.Multi.Results[i].Charge); e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		_ = p.onError(r, fmt.Errorf("%srefund: %w", p.prefix, err))
	}
}

// Wait waits, with Limiter.Wait, until r may proceed, then for its permit to run
// (WithConcurrency) as Decide does, for a pipeline built with Options.Wait. The wait is one
// decision, told to the observer as Decide's are, its Duration the time to admit r: allowed,
// denied when r's deadline comes before its turn (which ends r), or the limiter's error.
func (p *Pipeline[R]) Wait(ctx context.Context, r R, d *Decision) {
	if p.opts.Skip != nil && p.opts.Skip(r) {
		return
	}
	if p.limiter != nil {
		p.waitRate(ctx, r, d)
	}
	if p.opts.Concurrency != nil && d.Verdict == Proceed {
		p.acquire(ctx, r, d, p.opts.Concurrency, p.opts.InFlight(r))
	}
}

// waitRate is Wait's rate limit.
func (p *Pipeline[R]) waitRate(ctx context.Context, r R, d *Decision) {
	if !p.prepare(r, d) {
		return
	}
	d.Cost = 1
	pctx := p.withPriority(ctx, r)
	var start time.Duration
	if p.observer != nil {
		start = p.clock.Start()
	}
	err := p.limiter.Wait(pctx, d.bucket, d.Limit)
	_, deadline := ctx.Deadline()
	late := err != nil && ctx.Err() == nil && deadline &&
		errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ratelimit.ErrTimeout)
	if p.observer != nil {
		// The turn after the deadline is the limiter's answer, a denial, not its failure.
		d.Result = ratelimit.Result{Allowed: err == nil, Limit: d.Limit}
		reported := err
		if late {
			reported = nil
		}
		p.report(pctx, d, observe.Origin{}, reported, p.clock.Stop(start))
		d.Result = ratelimit.Result{}
	}
	switch {
	case err == nil:
		return
	case ctx.Err() != nil:
		d.Verdict, d.Err = Ended, ctx.Err()
		return
	case late:
		d.Verdict, d.Err = Ended, err
		return
	}
	p.fail(ctx, r, d, err)
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

// checkKey returns the error a limiter would return for the bucket key of key under name,
// or nil.
func checkKey(name bucket.Name, key string) error {
	if key == "" {
		return ratelimit.ErrKeyEmpty
	}
	return checkKeyLen(name, len(key))
}

// checkKeyLen returns the error a limiter would return for the bucket key of a key of n
// bytes under name for being too long, or nil.
func checkKeyLen(name bucket.Name, n int) error {
	n += name.HeadLen()
	if n > ratelimit.MaxKeyLen {
		return fmt.Errorf("%w: %d bytes with the policy's name", ratelimit.ErrKeyTooLong, n)
	}
	return nil
}

// checkName returns an error for a policy name a bucket key cannot carry: one with a '|'
// (see bucket.Separator).
func checkName(name string) error {
	if strings.IndexByte(name, bucket.Separator) >= 0 {
		return fmt.Errorf("policy name %q has a '|', which separates a bucket key's policy from its key", name)
	}
	return nil
}

// fail turns a limiter error into a verdict. A request whose own context has ended is
// ended, whatever the error: the limiter's failure to answer a request nobody waits for
// says nothing of its health, and failing open would run the handler for nobody.
func (p *Pipeline[R]) fail(ctx context.Context, r R, d *Decision, err error) {
	d.Err = err
	if ctx.Err() != nil {
		d.Verdict, d.Err = Ended, ctx.Err()
		return
	}
	if herr := p.onError(r, fmt.Errorf("%s%w", p.prefix, err)); herr != nil {
		d.Verdict, d.Err = Handled, herr
		return
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
}

// IsArgumentError reports whether err says the limiter was asked something it can never
// answer (a cost below 1, a limit it rejects, an operation it lacks, a list of limits it
// cannot decide as a whole), rather than that it failed to answer: observe.Classify's
// KindInvalidInput, the one list of such errors.
func IsArgumentError(err error) bool {
	return observe.Classify(nil, err) == observe.KindInvalidInput
}
