package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
)

// HoldTTL is how long a request's estimate stays held when the middleware settles
// (WithSettle), holding it (ratelimit.Settler's Hold): a hold its settle never reaches
// (the process crashed, the handler panicked) is given back after HoldTTL. A request that
// outlives it is settled all the same, its whole actual cost charged then (see
// distributed.Limiter.Hold).
const HoldTTL = 5 * time.Minute

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
// A hold (d.held) that the settle function leaves unsettled (ok false), or whose overrun
// is refused, is settled to its estimate: the charge kept, as a plain one is, the hold
// ended. Each settle is reported to the observer (observe.ReportSettle), under its
// policy's name and at the request's priority.
// The settle outlives r's context, within the limiter's own deadline; its errors go to the
// error handler.
func (p *Pipeline[R]) Settle(ctx context.Context, r R, d *Decision) {
	if p.opts.Settle == nil || p.settler == nil || !d.Charged {
		return
	}
	actual, ok := p.opts.Settle(r)
	if !ok {
		if d.held { // nothing to report: the charge stays as it was
			d.Charged = false
			_, err := p.settler.Settle(context.WithoutCancel(ctx), d.bucket, d.Limit, d.Result.Charge, d.Cost, d.Cost)
			if err != nil {
				_ = p.onError(r, fmt.Errorf("%ssettle: %w", p.prefix, err))
			}
		}
		return
	}
	d.Charged = false // settled once
	ctx = context.WithoutCancel(ctx)
	if p.observer != nil && priority.From(ctx) != d.priority {
		ctx = priority.With(ctx, d.priority)
	}
	var err error
	if d.Reqs == nil {
		err = p.settle(ctx, d, d.Policy, d.bucket, d.Limit, d.Result.Charge, d.Cost, actual)
	}
	for i, q := range d.Reqs {
		if q.Limit == (ratelimit.Limit{}) || i >= len(d.Multi.Results) {
			continue
		}
		policy := q.Name
		if policy == "" {
			policy = d.Policy
		}
		if e := p.settle(ctx, d, policy, q.Key, q.Limit, d.Multi.Results[i].Charge, max(q.N, 1), actual); e != nil && err == nil {
			err = e
		}
	}
	if err != nil {
		_ = p.onError(r, fmt.Errorf("%ssettle: %w", p.prefix, err))
	}
}

// settle settles one bucket of d and reports it to the observer.
func (p *Pipeline[R]) settle(ctx context.Context, d *Decision, policy, key string, limit ratelimit.Limit, c ratelimit.Charge, reserved, actual int) error {
	var start time.Duration
	if p.observer != nil {
		start = p.clock.Start()
	}
	res, err := p.settler.Settle(ctx, key, limit, c, reserved, actual)
	if p.observer != nil {
		call := observe.Call{Policy: policy, Backend: p.backend, Shadow: d.Shadow, Duration: p.clock.Stop(start)}
		observe.ReportSettle(ctx, p.observer, call, limit, reserved, actual, res, err)
	}
	if d.held && actual != reserved && (errors.Is(err, ratelimit.ErrExceedsBurst) || errors.Is(err, ratelimit.ErrNotSupported)) {
		// A refused overrun leaves a plain charge as it was; a hold it left in flight would
		// be given back at its expiry. Settled to its estimate, it is kept as charged.
		_, _ = p.settler.Settle(ctx, key, limit, c, reserved, reserved)
	}
	return err
}
