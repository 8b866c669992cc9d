package local

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

var _ ratelimit.Settler = (*Limiter)(nil)

// Settle settles the decision whose Result.Charge is c, which reserved tokens, to actual
// tokens, as ratelimit.Settler says: an underrun is Refund's, with c; an overrun is charged
// at once, into debt if need be, and a bucket is never more than Burst tokens in debt. What
// debt is, per algorithm, as on the Redis backend:
//
//   - The token bucket's TAT runs ahead of now by more than Burst: at most 2·Burst tokens.
//   - The leaky bucket's queue holds more than Burst: at most 2·Burst places.
//
// With KeepUsage the same, at the Rate of the call, to which the deficit carries as a refund
// carries it. The other algorithms, and a token bucket with a Warmup, refuse an overrun with
// an error wrapping ratelimit.ErrNotSupported (an underrun is a refund, which they all have):
// a window's count held past Burst would not fit the state the bucket packs its count in,
// and a warm bucket's TAT is counted on a clock that a debt would move. A settle is never
// refused for the priority ctx carries; its Result is Peek's for one token at that priority.
func (l *Limiter) Settle(ctx context.Context, key string, limit ratelimit.Limit, c ratelimit.Charge, reserved, actual int) (ratelimit.Result, error) {
	if reserved < 0 || actual < 0 {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: local: Settle: reserved = %d, actual = %d", args.ErrInvalidCost, reserved, actual)
	}
	if actual < reserved {
		return l.Refund(ctx, key, limit, reserved-actual, c)
	}
	named, w, err := l.validate(key, limit, 1)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	reserve, err := l.reserve(ctx, limit, 1)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	d := actual - reserved
	if d > 0 {
		if err := debtSupported(named); err != nil {
			return ratelimit.Result{Limit: limit}, err
		}
		if d > 2*limit.Burst {
			return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: local: Settle: an overrun of %d tokens is more than 2·Burst", ratelimit.ErrExceedsBurst, d)
		}
	}
	u := l.micros()
	booked := d == 0 || l.store.debit(key, named, u, w, d)
	v, delay := l.store.peek(key, named, u, w, 1, reserve)
	if !booked {
		return v.result(limit, delay), errDebt
	}
	return v.result(limit, delay), nil
}

// errDebt refuses an overrun that would put a bucket more than Burst tokens in debt.
var errDebt = fmt.Errorf("%w: local: Settle: the overrun would put the bucket more than Burst tokens in debt", ratelimit.ErrExceedsBurst)

// debtSupported returns nil if limit's bucket can be charged into debt (see Settle), or an
// error wrapping ratelimit.ErrNotSupported.
func debtSupported(limit ratelimit.Limit) error {
	if (limit.Algorithm == ratelimit.TokenBucket || limit.Algorithm == ratelimit.LeakyBucket) && limit.Warmup == 0 {
		return nil
	}
	return fmt.Errorf("%w: local: Settle: an overrun on %v (a token or leaky bucket without a warm-up keeps a debt)",
		ratelimit.ErrNotSupported, limit.Algorithm)
}

// debtor is a lockedState that can be charged into debt.
type debtor interface {
	// debit charges d tokens at u, even past empty, and reports true, if the bucket is
	// then at most Burst tokens in debt; otherwise it changes nothing and reports false.
	debit(limit ratelimit.Limit, u int64, d int) bool
}

// debit charges d tokens at u to the bucket of (key, limit), made if need be, within the
// debt bound, and reports whether it did (see debtor).
func (s *store) debit(key string, limit ratelimit.Limit, u, w int64, d int) bool {
	for {
		b, _ := s.bucketFor(key, limit, u, w)
		if b == nil {
			return false
		}
		if lk := b.lk; lk != nil {
			lk.mu.Lock()
			if !lk.dead {
				db, ok := lk.st.(debtor)
				booked := ok && db.debit(limit, u, d)
				lk.mu.Unlock()
				return booked
			}
			lk.mu.Unlock()
			continue // dropped between its lookup and now: look it up again
		}
		for {
			old, ok := loadWord(&b.word)
			if !ok {
				break // dropped: look it up again
			}
			next, fits := debitWord(old, limit, u, d)
			if !fits {
				return false
			}
			if b.word.CompareAndSwap(old, next) {
				return true
			}
		}
	}
}

// debitWord returns the token bucket's word old with d tokens charged at u, and whether the
// bucket is then at most Burst tokens in debt: its TAT, never before now, moves ahead by d,
// to at most 2·Burst past now, in the arithmetic of takeGCRA (and settle.lua) or of
// takeWholeGCRA.
func debitWord(old uint64, limit ratelimit.Limit, u int64, d int) (uint64, bool) {
	us := u - tokenEpochUS
	if limit.Rate <= scriptMaxRate {
		now := float64(us) * limit.Rate / 1e6
		next := max(math.Float64frombits(old), now) + float64(d)
		return math.Float64bits(next), next-now <= 2*float64(limit.Burst)
	}
	now := wholeClock(us, limit.Rate)
	next := max(int64(old-wholeOffset), now) + int64(d)
	return uint64(next) + wholeOffset, next-now <= 2*int64(limit.Burst)
}

// debit moves the queue's TAT ahead by d places, as decide does for an admission, to at most
// 2·Burst past now.
func (lb *leakyBucket) debit(limit ratelimit.Limit, u int64, d int) bool {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	clock := float64(u-tokenEpochUS) * limit.Rate / 1e6
	next := max(lb.tat, clock) + float64(d)
	if next-clock > 2*float64(limit.Burst) {
		return false
	}
	lb.tat = next
	return true
}

// debit is the token bucket's above casMaxRate: its tokens go below zero, to at most −Burst.
func (ft *fastTokens) debit(limit ratelimit.Limit, u int64, d int) bool {
	tokens := ft.at(limit.Rate, u) - float64(d)
	if tokens < -float64(ft.burst) {
		return false
	}
	ft.tokens, ft.last = tokens, max(u, ft.last)
	return true
}

func (ts timeState) debit(limit ratelimit.Limit, u int64, d int) bool {
	db, ok := ts.st.(interface {
		debit(limit ratelimit.Limit, u int64, d int) bool
	})
	return ok && db.debit(limit, u, d)
}

// debit is a token or leaky bucket's with KeepUsage: its deficit carried to the call's rate
// first, as refund carries it (none, a full bucket, is a TAT of now), then its TAT moved
// ahead by d, to at most 2·Burst past now, at the call's rate; as settle.lua's keep variant.
func (ks *keepState) debit(limit ratelimit.Limit, u int64, d int) bool {
	if ks.alg != ratelimit.TokenBucket && ks.alg != ratelimit.LeakyBucket {
		return false
	}
	us := u - tokenEpochUS
	now := float64(us) * limit.Rate / 1e6
	tat := ks.tat
	if ks.rate != limit.Rate {
		tat = math.Inf(-1)
		if a0 := ks.tat - float64(us)*ks.rate/1e6; a0 > 0 {
			tat = now + a0
		}
	}
	next := max(tat, now) + float64(d)
	if next-now > 2*float64(limit.Burst) {
		return false
	}
	ks.tat, ks.rate = next, limit.Rate
	return true
}

// Hold decides n tokens as AllowN does, as ratelimit.Settler says: a bucket of this process
// is its holder's own, so a hold is a charge, which Settle (or Refund) with the Result's
// Charge settles, and which no crash of the holder can leave behind. A ttl under 1 µs is
// refused, as on every backend.
func (l *Limiter) Hold(ctx context.Context, key string, limit ratelimit.Limit, n int, ttl time.Duration) (ratelimit.Result, error) {
	if ttl < time.Microsecond {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: local: Hold: ttl = %v, want 1µs or more", args.ErrInvalidRequest, ttl)
	}
	return l.AllowN(ctx, key, limit, n)
}
