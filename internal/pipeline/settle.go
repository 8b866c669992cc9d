package pipeline

import (
	"context"
	"fmt"

	"github.com/sluice-go/ratelimit"
)

// settlerFor returns l's ratelimit.Settler when the middleware settles (WithSettle), or an
// error when l has none: a middleware told to settle refuses to start rather than charge
// every request its estimate only.
func settlerFor(l ratelimit.Limiter, settles bool) (ratelimit.Settler, error) {
	if !settles {
		return nil, nil
	}
	s, ok := ratelimit.As[ratelimit.Settler](l)
	if !ok {
		return nil, fmt.Errorf("WithSettle: %T cannot settle (ratelimit.Settler)", l)
	}
	return s, nil
}

// Settle settles what d charged to r's actual cost, as the middleware's settle function
// (WithSettle) gives it after the handler ran: each bucket the decision charged, from the
// tokens it took (d.Cost, or an entry's N) to actual, with the decision's Charge, so that
// the settle goes where the tokens were taken. A decision refunded (Refund) or that charged
// nothing is not settled; a shadow decision settles its shadow buckets, as it refunds them.
// The settle outlives r's context, within the limiter's own deadline; its errors go to the
// error handler.
func (p *Pipeline[R]) Settle(ctx context.Context, r R, d *Decision) {
	if p.opts.Settle == nil || p.settler == nil || !d.Charged {
		return
	}
	actual, ok := p.opts.Settle(r)
	if !ok {
		return
	}
	d.Charged = false // settled once
	ctx = context.WithoutCancel(ctx)
	var err error
	if d.Reqs == nil {
		_, err = p.settler.Settle(ctx, d.bucket, d.Limit, d.Result.Charge, d.Cost, actual)
	}
	for i, q := range d.Reqs {
		if q.Limit == (ratelimit.Limit{}) || i >= len(d.Multi.Results) {
			continue
		}
		if _, e := p.settler.Settle(ctx, q.Key, q.Limit, d.Multi.Results[i].Charge, max(q.N, 1), actual); e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		_ = p.onError(r, fmt.Errorf("%ssettle: %w", p.prefix, err))
	}
}
