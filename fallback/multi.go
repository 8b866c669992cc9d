package fallback

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
)

// parts are the capabilities of a Limiter's primary and secondary, found once by New with
// ratelimit.As; nil for one a part lacks.
type parts struct {
	primaryMulti, secondaryMulti ratelimit.MultiLimiter
	primaryIns, secondaryIns     ratelimit.Inspector
	primaryVal, secondaryVal     ratelimit.LimitValidator
	primaryHold                  ratelimit.Settler
}

func partsOf(primary, secondary ratelimit.Limiter) parts {
	var p parts
	p.primaryMulti, _ = ratelimit.As[ratelimit.MultiLimiter](primary)
	p.primaryIns, _ = ratelimit.As[ratelimit.Inspector](primary)
	p.primaryVal, _ = ratelimit.As[ratelimit.LimitValidator](primary)
	p.primaryHold, _ = ratelimit.As[ratelimit.Settler](primary)
	if secondary != nil {
		p.secondaryMulti, _ = ratelimit.As[ratelimit.MultiLimiter](secondary)
		p.secondaryIns, _ = ratelimit.As[ratelimit.Inspector](secondary)
		p.secondaryVal, _ = ratelimit.As[ratelimit.LimitValidator](secondary)
	}
	return p
}

// As gives what ratelimit.As asks of the capabilities the Limiter has when its parts have
// them: a ratelimit.MultiLimiter, whose AllowAll is AllowAllOrigin without the origin, and a
// ratelimit.Inspector, when the primary and the secondary (if any) both have one; a
// ratelimit.LimitValidator, which checks a limit with both (the secondary, its share), when
// either has one. The Limiter claims none otherwise, so that a middleware that needs one
// refuses to start rather than fail every request.
//
// The Inspector's Peek and Reset go to the primary through the breaker, or while it is
// unavailable to the secondary under the scaled limit; Reset and Refund make the denial
// cache forget the bucket. Refund gives tokens back to the part the Charge names, the one
// that took them, and nowhere else: to the primary through the breaker, refunding nothing
// (an error wrapping ErrUnavailable) while it cannot be reached; to the secondary under the
// scaled limit. The zero Charge refunds the bucket that would decide now, and a Charge that
// names no part of the Limiter is refused (ratelimit.ErrInvalidArgument). A Settler, when
// both parts have one, settles the part that charged, as Refund refunds it, and holds on
// the primary as AllowN decides on it (the breaker, the denial cache); while the primary is
// unavailable it decides a hold with the secondary's AllowN, which records no hold: its
// Charge names the secondary, which Settle settles as any of its charges.
func (l *Limiter) As(target any) bool {
	switch t := target.(type) {
	case *ratelimit.MultiLimiter:
		if l.parts.primaryMulti != nil && (l.secondary == nil || l.parts.secondaryMulti != nil) {
			*t = multi{l}
			return true
		}
	case *ratelimit.Inspector:
		if l.parts.primaryIns != nil && (l.secondary == nil || l.parts.secondaryIns != nil) {
			*t = inspector{l}
			return true
		}
	case *ratelimit.Settler:
		if s, ok := settlerOf(l); ok {
			*t = s
			return true
		}
	case *ratelimit.LimitValidator:
		if l.parts.primaryVal != nil || l.parts.secondaryVal != nil {
			*t = validator{l}
			return true
		}
	}
	return false
}

// multi is a Limiter's ratelimit.MultiLimiter.
type multi struct{ l *Limiter }

func (m multi) AllowAll(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, error) {
	mr, _, err := m.l.AllowAllOrigin(ctx, reqs)
	return mr, err
}

// validator is a Limiter's ratelimit.LimitValidator.
type validator struct{ l *Limiter }

func (v validator) ValidateLimit(limit ratelimit.Limit) error { return v.l.validateLimit(limit) }

// inspector is a Limiter's ratelimit.Inspector.
type inspector struct{ l *Limiter }

func (i inspector) Peek(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	return i.l.peek(ctx, key, limit, n)
}

func (i inspector) Refund(ctx context.Context, key string, limit ratelimit.Limit, n int, c ratelimit.Charge) (ratelimit.Result, error) {
	return i.l.refund(ctx, key, limit, n, c)
}

func (i inspector) Reset(ctx context.Context, key string, limit ratelimit.Limit) error {
	return i.l.reset(ctx, key, limit)
}

// AllowAllOrigin decides several limits at once with the primary, through the breaker as
// AllowN does, and while the primary is unavailable with the secondary, each limit scaled
// to this instance's share (WithInstances). A list the primary denied is denied again by
// the denial cache while the denial of its binding request lasts (see the package
// documentation), charging nothing, with the primary's Results aged. It also says
// which limiter decided, as AllowNOrigin does: the primary or the secondary, or the
// Limiter itself ("fallback") for ratelimit.ErrClosed and the errors it returns alone. It
// returns an error wrapping ratelimit.ErrNotSupported when a part cannot decide several
// limits at once (As gives no ratelimit.MultiLimiter then).
func (l *Limiter) AllowAllOrigin(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, observe.Origin, error) {
	if l.closed.Load() {
		return ratelimit.MultiResult{}, l.origins.self, ratelimit.ErrClosed
	}
	var m ratelimit.MultiLimiter
	if !l.As(&m) {
		return ratelimit.MultiResult{}, l.origins.self, fmt.Errorf("%w: AllowAll: a part of %s decides no several limits at once",
			ratelimit.ErrNotSupported, l.BackendName())
	}
	p := priority.From(ctx)
	sent := l.now()
	var gen uint64
	if l.cache != nil {
		var mr ratelimit.MultiResult
		var ok bool
		if mr, gen, ok = l.cache.lookupAll(reqs, p, sent); ok {
			return mr, l.origins.cache, nil
		}
	}
	primary := l.parts.primaryMulti
	var mr ratelimit.MultiResult
	var err error
	fell, cause := l.call(ctx, firstKey(reqs), func() error {
		mr, err = primary.AllowAll(ctx, reqs)
		return err
	})
	if !fell {
		if err == nil && l.cache != nil {
			l.remember(reqs, p, sent, gen, mr)
		}
		return charged(mr, reqs, partPrimary), l.origins.primary, err
	}
	secondary := l.parts.secondaryMulti
	if secondary == nil {
		return ratelimit.MultiResult{}, l.origins.self, cause
	}
	shares := make([]ratelimit.Request, len(reqs))
	for i, q := range reqs {
		if share := l.share(q.Limit); q.Limit != (ratelimit.Limit{}) && share != q.Limit {
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
	return charged(mr, reqs, partSecondary), l.origins.secondary, err
}

// remember tells the denial cache the primary's answer mr to reqs, sent at sent at
// priority p: an admission makes it forget every bucket charged, as AllowN's does; a denial
// is stored (denialCache.storeAll).
func (l *Limiter) remember(reqs []ratelimit.Request, p priority.Level, sent int64, gen uint64, mr ratelimit.MultiResult) {
	if !mr.Allowed {
		l.cache.storeAll(reqs, p, sent, gen, mr)
		return
	}
	for i := range reqs {
		if reqs[i].Limit != (ratelimit.Limit{}) {
			l.cache.forget(reqs[i].Key, reqs[i].Limit)
		}
	}
}

// charged marks the Charges of mr, an admission of reqs by the part named part, as this
// Limiter's. A denial, and an entry skipped for its zero Limit, charged nothing.
func charged(mr ratelimit.MultiResult, reqs []ratelimit.Request, part string) ratelimit.MultiResult {
	if mr.Allowed && len(mr.Results) == len(reqs) {
		for i := range mr.Results {
			if reqs[i].Limit != (ratelimit.Limit{}) {
				mr.Results[i].Charge = mark(mr.Results[i].Charge, part)
			}
		}
	}
	return mr
}

// peek is Peek: it answers as the primary would, through the breaker, and while it is
// unavailable as the secondary would under the scaled limit.
func (l *Limiter) peek(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	return l.inspect(ctx, key, limit, func(ins ratelimit.Inspector, share ratelimit.Limit) (ratelimit.Result, error) {
		if share != limit { // as AllowN degraded: a cost above the share's part takes all of it
			return ins.Peek(ctx, key, share, l.shareCost(priority.From(ctx), limit, share, n))
		}
		return ins.Peek(ctx, key, limit, n)
	})
}

// refund is Refund: it gives n tokens back to the limiter that charged them, which c.Part
// names, and nowhere else, with that limiter's own part of c; a denial the cache holds for
// the bucket is forgotten.
//
//   - Charged by the secondary, it refunds the secondary, under the scaled limit it was
//     charged under (WithInstances), whatever the breaker's state now.
//   - Charged by the primary, it refunds the primary through the breaker, as AllowN would
//     call it. While the breaker keeps calls off the primary, or when the primary fails,
//     nothing is refunded: the error wraps ErrUnavailable. The secondary never took those
//     tokens, and refunding it would let one more request through than either limiter
//     allows; a refund held back only leaves tokens taken until they refill.
//   - With the zero Charge (an operator's refund), it refunds the primary's bucket, or,
//     while the primary is unavailable, the secondary's under the scaled limit.
//
// A Charge that names no part of this Limiter is refused with an error wrapping
// ratelimit.ErrInvalidArgument, having refunded nothing.
func (l *Limiter) refund(ctx context.Context, key string, limit ratelimit.Limit, n int, c ratelimit.Charge) (ratelimit.Result, error) {
	defer l.invalidate(key, limit)
	part, own := unmark(c)
	switch part {
	case "":
		return l.inspect(ctx, key, limit, func(ins ratelimit.Inspector, limit ratelimit.Limit) (ratelimit.Result, error) {
			return ins.Refund(ctx, key, limit, n, c)
		})
	case partPrimary:
		return l.refundPrimary(ctx, key, limit, n, own)
	case partSecondary:
		if l.closed.Load() {
			return ratelimit.Result{Limit: limit}, ratelimit.ErrClosed
		}
		secondary := l.parts.secondaryIns
		if secondary == nil {
			return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: the secondary %T cannot refund", ratelimit.ErrNotSupported, l.secondary)
		}
		share := l.share(limit)
		return secondary.Refund(ctx, key, share, min(n, share.Burst), own)
	}
	return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: Refund: the charge's part %q is none of this limiter's", args.ErrInvalidRequest, c.Part)
}

// refundPrimary refunds the primary through the breaker, with the primary's own charge c,
// or nothing when the primary cannot be reached (see Refund).
func (l *Limiter) refundPrimary(ctx context.Context, key string, limit ratelimit.Limit, n int, c ratelimit.Charge) (ratelimit.Result, error) {
	if l.closed.Load() {
		return ratelimit.Result{Limit: limit}, ratelimit.ErrClosed
	}
	primary := l.parts.primaryIns
	if primary == nil {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: the primary %T cannot inspect buckets", ratelimit.ErrNotSupported, l.primary)
	}
	var res ratelimit.Result
	var err error
	fell, cause := l.call(ctx, key, func() error {
		res, err = primary.Refund(ctx, key, limit, n, c)
		return err
	})
	if fell {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("fallback: Refund: nothing refunded to the primary, which charged the tokens: %w", cause)
	}
	return res, err
}

// The parts of a Limiter that a Charge names: the limiter that decided, followed, after a
// slash, by the Part of that limiter's own Charge, if it has one (a fallback Limiter within
// a fallback Limiter).
const (
	partPrimary   = "primary"
	partSecondary = "secondary"
)

// mark returns c, the Charge of the part named part, as this Limiter's.
func mark(c ratelimit.Charge, part string) ratelimit.Charge {
	if c.Part != "" {
		part += "/" + c.Part
	}
	c.Part = part
	return c
}

// unmark is mark undone: the part c names, and that part's own Charge.
func unmark(c ratelimit.Charge) (string, ratelimit.Charge) {
	part, own, _ := strings.Cut(c.Part, "/")
	c.Part = own
	return part, c
}

// reset is Reset: it makes the primary's bucket full again, or, while the primary is
// unavailable, the secondary's; the denial cache forgets the bucket's denials, those
// decided before the reset and answered after it too.
func (l *Limiter) reset(ctx context.Context, key string, limit ratelimit.Limit) error {
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
	primary := l.parts.primaryIns
	if primary == nil {
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
	secondary := l.parts.secondaryIns
	if secondary == nil {
		return ratelimit.Result{Limit: limit}, cause
	}
	return op(secondary, l.share(limit))
}

// call runs op, a call to the primary, through the breaker. fell reports that the primary
// could not decide (it failed, or the breaker kept the call off it), and cause why; when it
// did decide, or answered with an error that is not a failure, op's results stand.
func (l *Limiter) call(ctx context.Context, key string, op func() error) (fell bool, cause error) {
	ok, t := l.breaker.Admit(l.now())
	if !ok {
		return true, errOpen
	}
	err := op()
	switch {
	case err == nil:
		l.breaker.Success(t)
		return false, nil
	case !isFailure(ctx, err):
		l.breaker.Inconclusive(t, l.now())
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
