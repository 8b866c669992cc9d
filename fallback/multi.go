package fallback

import (
	"context"
	"fmt"

	"github.com/sluice-go/ratelimit"
)

var (
	_ ratelimit.MultiLimiter = (*Limiter)(nil)
	_ ratelimit.Inspector    = (*Limiter)(nil)
)

// AllowAll decides several limits at once with the primary, through the breaker as AllowN
// does, and while the primary is unavailable with the secondary, each limit scaled to this
// instance's share (WithInstances). It returns ratelimit.ErrNotSupported when the primary
// cannot decide several limits at once, and an error wrapping ErrUnavailable when it
// fails and the secondary cannot either. The denial cache plays no part.
func (l *Limiter) AllowAll(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, error) {
	mr, _, err := l.AllowAllOrigin(ctx, reqs)
	return mr, err
}

// AllowAllOrigin is AllowAll, and also says which limiter decided, as AllowNOrigin does:
// the primary or the secondary, or the Limiter itself ("fallback") for ratelimit.ErrClosed
// and the errors it returns alone.
func (l *Limiter) AllowAllOrigin(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, ratelimit.Origin, error) {
	if l.closed.Load() {
		return ratelimit.MultiResult{}, l.origins.self, ratelimit.ErrClosed
	}
	primary, ok := l.primary.(ratelimit.MultiLimiter)
	if !ok {
		return ratelimit.MultiResult{}, l.origins.self, fmt.Errorf("%w: AllowAll: the primary %T", ratelimit.ErrNotSupported, l.primary)
	}
	var mr ratelimit.MultiResult
	var err error
	fell, cause := l.call(ctx, firstKey(reqs), func() error {
		mr, err = primary.AllowAll(ctx, reqs)
		return err
	})
	if !fell {
		return mr, l.origins.primary, err
	}
	secondary, ok := l.secondary.(ratelimit.MultiLimiter)
	if !ok {
		return ratelimit.MultiResult{}, l.origins.self, cause
	}
	shares := make([]ratelimit.Request, len(reqs))
	p := ratelimit.PriorityFrom(ctx)
	for i, q := range reqs {
		if share := l.share(q.Limit); !q.Limit.IsZero() && share != q.Limit {
			// As AllowN degraded: a cost the primary could admit takes at most the part of
			// the share left to the priority; a cost the limit itself refuses is refused.
			if q.N <= q.Limit.Burst {
				q.N = l.shareCost(p, q.Limit, share, q.N)
			}
			q.Limit = share
		}
		shares[i] = q
	}
	mr, err = secondary.AllowAll(ctx, shares)
	return mr, l.origins.secondary, err
}

// Peek answers as the primary would, through the breaker, and while it is unavailable as
// the secondary would under the scaled limit.
func (l *Limiter) Peek(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	return l.inspect(ctx, key, limit, func(ins ratelimit.Inspector, share ratelimit.Limit) (ratelimit.Result, error) {
		if share != limit { // as AllowN degraded: a cost above the share's part takes all of it
			return ins.Peek(ctx, key, share, l.shareCost(ratelimit.PriorityFrom(ctx), limit, share, n))
		}
		return ins.Peek(ctx, key, limit, n)
	})
}

// Refund gives n tokens back to the primary's bucket, or, while the primary is
// unavailable, to the secondary's under the scaled limit; the denial cache forgets the
// bucket's denials, those decided before the refund and answered after it too.
func (l *Limiter) Refund(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	defer l.invalidate(key, limit)
	return l.inspect(ctx, key, limit, func(ins ratelimit.Inspector, limit ratelimit.Limit) (ratelimit.Result, error) {
		return ins.Refund(ctx, key, limit, n)
	})
}

// Reset makes the primary's bucket full again, or, while the primary is unavailable, the
// secondary's; the denial cache forgets the bucket's denials, those decided before the
// reset and answered after it too.
func (l *Limiter) Reset(ctx context.Context, key string, limit ratelimit.Limit) error {
	defer l.invalidate(key, limit)
	_, err := l.inspect(ctx, key, limit, func(ins ratelimit.Inspector, limit ratelimit.Limit) (ratelimit.Result, error) {
		return ratelimit.Result{}, ins.Reset(ctx, key, limit)
	})
	return err
}

// invalidate makes the denial cache forget (key, limit) after a reset or a refund of it,
// with the answers still on their way from the primary that may predate it.
func (l *Limiter) invalidate(key string, limit ratelimit.Limit) {
	if l.cache != nil {
		l.cache.invalidate(key, limit)
	}
}

// inspect runs op on the primary's Inspector with limit through the breaker, and on the
// secondary's with this instance's share of limit while the primary is unavailable.
func (l *Limiter) inspect(ctx context.Context, key string, limit ratelimit.Limit,
	op func(ratelimit.Inspector, ratelimit.Limit) (ratelimit.Result, error)) (ratelimit.Result, error) {
	if l.closed.Load() {
		return ratelimit.Result{Limit: limit}, ratelimit.ErrClosed
	}
	primary, ok := l.primary.(ratelimit.Inspector)
	if !ok {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: the primary %T cannot inspect buckets", ratelimit.ErrNotSupported, l.primary)
	}
	var res ratelimit.Result
	var err error
	fell, cause := l.call(ctx, key, func() error {
		res, err = op(primary, limit)
		return err
	})
	if !fell {
		return res, err
	}
	secondary, ok := l.secondary.(ratelimit.Inspector)
	if !ok {
		return ratelimit.Result{Limit: limit}, cause
	}
	return op(secondary, l.share(limit))
}

// call runs op, a call to the primary, through the breaker. fell reports that the primary
// could not decide (it failed, or the breaker kept the call off it), and cause why; when it
// did decide, or answered with an error that is not a failure, op's results stand.
func (l *Limiter) call(ctx context.Context, key string, op func() error) (fell bool, cause error) {
	ok, t := l.breaker.admit(l.now())
	if !ok {
		return true, errOpen
	}
	err := op()
	switch {
	case err == nil:
		l.breaker.success(t)
		return false, nil
	case !isFailure(ctx, err):
		l.breaker.inconclusive(t, l.now())
		return false, nil
	}
	l.fail(ctx, key, t, err)
	return true, fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// firstKey returns the first key of reqs, for the error handler.
func firstKey(reqs []ratelimit.Request) string {
	if len(reqs) == 0 {
		return ""
	}
	return reqs[0].Key
}
