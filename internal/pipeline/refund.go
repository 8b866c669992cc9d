package pipeline

import (
	"context"
	"fmt"

	"github.com/sluice-go/ratelimit"
)

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
		if q.Limit == (ratelimit.Limit{}) || i >= len(d.Multi.Results) {
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
