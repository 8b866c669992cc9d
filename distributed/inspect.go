package distributed

import (
	"context"
	"fmt"

	"github.com/sluice-go/ratelimit"
)

var _ ratelimit.Inspector = (*Limiter)(nil)

// Peek returns what AllowN(ctx, key, limit, n) would answer now, at the priority ctx
// carries, computed by the same script text on the Redis clock, and writes nothing: a
// bucket that does not exist is not created. Arguments are checked as AllowN checks them.
func (l *Limiter) Peek(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	if err := l.check(key, limit, n); err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	reserve, err := l.reserve(ctx, limit, n)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	return l.inspect(ctx, "peek", key, limit, n, reserve)
}

// Refund gives n tokens back to the bucket of (key, limit), never beyond a full bucket, and
// returns its state afterwards as Peek would for one token, at the priority ctx carries. A missing bucket is a no-op. Per
// algorithm: the token bucket moves its TAT back by n, not before now; the leaky bucket
// likewise frees n places in its queue (requests already admitted keep the Delay they were
// given); the fixed window and the sliding window counter take n from the current window's
// count, not below zero (a count of an ended window is gone already); the sliding log drops
// its n newest entries still in the window; the token bucket with a warm-up moves its TAT
// back by n on its warm clock, never past where the bucket holds all it can, and leaves its
// warm-up as it is (a cold one has nothing to give back). n above Burst gives back Burst.
// docs/limits.md says what a refund can and cannot undo.
func (l *Limiter) Refund(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	if n < 1 {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: n = %d", ratelimit.ErrInvalidCost, n)
	}
	if err := l.check(key, limit, 1); err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	reserve, err := l.reserve(ctx, limit, 1)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	return l.inspect(ctx, "refund", key, limit, min(n, limit.Burst), reserve)
}

// Reset makes the bucket of (key, limit) full again by deleting it: a missing bucket is a
// full one (and, with a warm-up, a cold one).
func (l *Limiter) Reset(ctx context.Context, key string, limit ratelimit.Limit) error {
	if err := l.check(key, limit, 1); err != nil {
		return err
	}
	_, err := l.inspect(ctx, "reset", key, limit, 1, 0)
	return err
}

// inspect runs multi.lua in mode on the one bucket of (key, limit), for a request that
// leaves reserve tokens in it.
func (l *Limiter) inspect(ctx context.Context, mode, key string, limit ratelimit.Limit, n, reserve int) (ratelimit.Result, error) {
	alg := l.algorithmFor(limit)
	var g group
	g.add(0, l.key(key, alg.tag, limit), limit, n, alg, reserve)
	vals, err := g.run(ctx, l, mode, "")
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	return resultOf(vals[2:], limit), nil
}
