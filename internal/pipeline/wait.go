package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/observe"
)

// Wait waits, with Limiter.Wait, until r may proceed, then for its permit to run
// (WithConcurrency) as Decide does, for a pipeline built with Options.Wait. The wait is one
// decision, told to the observer as Decide's are, its Duration the time to admit r: allowed,
// denied when r's deadline comes before its turn (which ends r), or the limiter's error.
func (p *Pipeline[R]) Wait(ctx context.Context, r R, d *Decision) {
	if p.opts.Skip != nil && p.opts.Skip(r) {
		return
	}
	// New refuses WithWait beside the options of several limits: r has one, or none.
	if pctx, _, ok := p.prepare(ctx, r, d); ok {
		p.waitLimit(ctx, pctx, r, d)
	}
	p.permit(ctx, r, d, nil)
}

// waitLimit is Wait's rate limit, d prepared, with pctx, r's context with its priority.
func (p *Pipeline[R]) waitLimit(ctx, pctx context.Context, r R, d *Decision) {
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
