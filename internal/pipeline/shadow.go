package pipeline

import (
	"context"
	"time"

	"github.com/sluice-go/ratelimit/observe"
)

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
	d.Multi.Allowed = true
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
