package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/internal/bucket"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/rules"
)

// permit gives r its permit to run, when the rate limit let it through (d.Verdict is still
// Proceed) and WithConcurrency holds a concurrency limiter: at most its policy's concurrency
// under the rules (pol, nil for none), or WithConcurrency's max for a policy without one.
// Shadow mode never takes a permit under the rules, since a permit would be held for real.
func (p *Pipeline[R]) permit(ctx context.Context, r R, d *Decision, pol *rules.Policy) {
	if p.opts.Concurrency == nil || d.Verdict != Proceed {
		return
	}
	n := 0
	if pol != nil {
		if d.Shadow {
			return
		}
		n = pol.Concurrency
	}
	if n == 0 {
		n = p.opts.InFlight(r)
	}
	p.acquire(ctx, r, d, p.opts.Concurrency, n)
}

// acquire gives r, which the rate limit let through, its permit to run (WithConcurrency, or
// its policy's concurrency: at most max of its key under l), waiting as l's queue allows,
// within r's context: the permit is in
// d.Permit, for the middleware to release when the handler returns. A request that finds
// no room is Busy; a failure of the limiter goes to the error policy as a rate limiter's
// does, and a request that proceeds failing open holds no permit.
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

// reportPermit tells the observer of a concurrency limit's decision (see
// observe.Decision.Concurrency): a permit granted, refused (err wraps ErrQueueFull) or not
// decided, in took; unpermitted when the request runs without a permit all the same.
func (p *Pipeline[R]) reportPermit(ctx context.Context, r R, policy string, err error, took time.Duration, unpermitted bool) {
	d := observe.Decision{Policy: policy, Backend: p.permitBackend, Cost: 1, Duration: took, Concurrency: true,
		Priority: priority.From(p.withPriority(ctx, r)), Unpermitted: unpermitted}
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
