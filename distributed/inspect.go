package distributed

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
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
	return l.inspect(ctx, "peek", key, limit, n, reserve, "")
}

// Refund gives back n tokens that the decision whose Result.Charge is c took from the
// bucket of (key, limit), never beyond a full bucket, and returns the bucket's state
// afterwards as Peek would for one token, at the priority ctx carries; see
// ratelimit.Inspector. A missing bucket is a no-op. n above Burst gives back Burst. Per
// algorithm, in the same script text as the local backend's arithmetic:
//
//   - The fixed window takes n from the count of the window that held c.At, if that is
//     still the current window; otherwise it gives nothing back.
//   - The calendar quota likewise takes n from the count of the period that held c.At, if
//     that is still the current period.
//   - The sliding window counter takes n from the count of the window that held c.At, if
//     that is the current window or the one before (whose count still weighs in the
//     estimate); otherwise it gives nothing back.
//   - The sliding log drops n of its entries recorded at c.At that are still in the
//     window; once they have left it, nothing.
//   - The token bucket moves its TAT back by n, not before now, whatever c.At; the leaky
//     bucket likewise frees n places in its queue (requests already admitted keep the
//     Delay they were given); with a warm-up, the TAT moves back by n on the warm clock,
//     never past where the bucket holds all it can, and the warm-up stays as it is (a cold
//     bucket has nothing to give back).
//
// A hold's Charge (Hold) gives back up to the tokens it holds, settling the hold, and nothing
// once the hold has expired (it was given back then).
//
// With the zero Charge the windows refund their current window and the sliding log drops its n
// newest entries still in the window: an operator's refund.
// https://github.com/sluice-go/ratelimit/blob/main/docs/limits.md says what a refund can and
// cannot undo.
func (l *Limiter) Refund(ctx context.Context, key string, limit ratelimit.Limit, n int, c ratelimit.Charge) (ratelimit.Result, error) {
	if n < 1 {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: n = %d", args.ErrInvalidCost, n)
	}
	if held, _, ok := parseHold(c.Part); ok {
		return l.settleHold(ctx, "refund", key, limit, c, held, held-min(n, held))
	}
	if err := l.check(key, limit, 1); err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	reserve, err := l.reserve(ctx, limit, 1)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	at := ""
	if !c.At.IsZero() {
		at = strconv.FormatInt(c.At.Sub(epoch).Microseconds(), 10)
	}
	return l.inspect(ctx, "refund", key, limit, min(n, limit.Burst), reserve, at)
}

// Reset makes the bucket of (key, limit) full again by deleting it, with its holds (Hold) in
// the same script: a missing bucket is a full one (and, with a warm-up, a cold one).
func (l *Limiter) Reset(ctx context.Context, key string, limit ratelimit.Limit) error {
	if err := l.check(key, limit, 1); err != nil {
		return err
	}
	_, err := l.runHold(ctx, "reset", key, limit, 1, 0, 1, 0, 0, 0)
	return err
}

// inspect runs multi.lua in mode on the one bucket of (key, limit), for a request that
// leaves reserve tokens in it; at is a refund's ARGV[3].
func (l *Limiter) inspect(ctx context.Context, mode, key string, limit ratelimit.Limit, n, reserve int, at string) (ratelimit.Result, error) {
	alg := l.algorithmFor(limit)
	var g group
	g.add(0, l.key(key, alg.tag, limit), limit, n, alg, reserve)
	vals, err := g.run(ctx, l, mode, at)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	return resultOf(vals[2:], limit), nil
}
