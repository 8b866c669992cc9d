package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/bucket"
	"github.com/sluice-go/ratelimit/internal/wait"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
)

// Decide decides whether r, whose context is ctx, may proceed, taking its cost from its
// buckets if so. A shaper's delay is served before Decide returns.
//
// Every request takes the same path: prepare yields its requests of the limiter (one limit,
// several, or its policy's under the rules in force); decideLimits asks the limiter (AllowN
// for one, or the Settler's Hold when WithSettle settles; AllowAll for several),
// reports to the observer, and reads the answer: shadow mode, the error policy, the verdict;
// then a request let through takes its permit to run (WithConcurrency, or its policy's
// concurrency).
//
// The decision is made in *d, which must be zero: a Decision is a few hundred bytes, which
// every step of the pipeline would copy if it were passed by value.
func (p *Pipeline[R]) Decide(ctx context.Context, r R, d *Decision) {
	if p.opts.Skip != nil && p.opts.Skip(r) {
		return
	}
	pctx, pol, ok := p.prepare(ctx, r, d)
	if ok {
		d.priority = priority.From(pctx)
		p.decideLimits(pctx, r, d)
	}
	p.permit(ctx, r, d, pol)
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
	case p.settler != nil:
		// WithSettle's estimate, held until the settle (Settle).
		if p.holdOrigin != nil {
			d.Result, origin, err = p.holdOrigin.HoldOrigin(ctx, d.bucket, d.Limit, d.Cost, HoldTTL)
		} else {
			d.Result, err = p.settler.Hold(ctx, d.bucket, d.Limit, d.Cost, HoldTTL)
		}
		d.held = d.Result.Allowed
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
	case p.opts.FailClosed:
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
