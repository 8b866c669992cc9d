package local

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

var _ ratelimit.Inspector = (*Limiter)(nil)

// Peek returns what AllowN(ctx, key, limit, n) would answer now, at ctx's priority, and
// writes nothing: a bucket that does not exist is not created, and is answered for as a new
// one. Arguments are checked as AllowN checks them.
func (l *Limiter) Peek(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	named, w, err := l.validate(key, limit, n)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	reserve, err := l.reserve(ctx, limit, n)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	v, delay := l.store.peek(key, named, l.micros(), w, n, reserve)
	return v.result(limit, delay), nil
}

// Refund gives back n tokens that the decision whose Result.Charge is c took from the
// bucket of (key, limit), never beyond a full bucket, and returns the bucket's state
// afterwards as Peek would for one token, at ctx's priority; see ratelimit.Inspector. A
// missing bucket is a no-op. n above Burst gives back Burst. Per algorithm, as on the Redis
// backend:
//
//   - The fixed window takes n from the count of the window that held c.At, if that is
//     still the current window; otherwise it gives nothing back.
//   - The calendar quota likewise takes n from the count of the period that held c.At, if
//     that is still the current period.
//   - The sliding window counter takes n from the count of the window that held c.At, if
//     that is the current window or the one before (whose count still weighs in the
//     estimate); otherwise it gives nothing back.
//   - The sliding log drops n of its entries recorded at c.At that are still in the
//     window; once they have left it, nothing. (Should the clock have read earlier than
//     the log's newest entry when the request was decided, its entries were recorded at
//     that newest one, and the refund finds none.)
//   - The token bucket moves its TAT back by n, not before now, whatever c.At (with a
//     warm-up, on its warm clock, never past where the bucket holds all it can, and its
//     warm-up goes on); the leaky bucket frees n places in its queue (requests admitted
//     meanwhile keep the Delay they were given).
//
// With the zero Charge the windows refund their current window and the sliding log drops its n
// newest entries still in the window: an operator's refund.
// https://github.com/sluice-go/ratelimit/blob/main/docs/limits.md says what a refund can and
// cannot undo.
func (l *Limiter) Refund(ctx context.Context, key string, limit ratelimit.Limit, n int, c ratelimit.Charge) (ratelimit.Result, error) {
	if n < 1 {
		return ratelimit.Result{Limit: limit}, fmt.Errorf("%w: n = %d", args.ErrInvalidCost, n)
	}
	named, w, err := l.validate(key, limit, 1)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	reserve, err := l.reserve(ctx, limit, 1)
	if err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	u, at := l.micros(), int64(noCharge)
	if !c.At.IsZero() {
		at = c.At.UnixMicro()
	}
	l.store.refund(key, named, u, at, w, min(n, limit.Burst))
	v, delay := l.store.peek(key, named, u, w, 1, reserve)
	return v.result(limit, delay), nil
}

// Reset makes the bucket of (key, limit) full again.
func (l *Limiter) Reset(_ context.Context, key string, limit ratelimit.Limit) error {
	named, w, err := l.validate(key, limit, 1)
	if err != nil {
		return err
	}
	l.store.reset(key, named, l.micros(), w)
	return nil
}

// peek is the verdict decideAt would give at u, for a limit whose Algorithm is named, with its
// Delay, without changing anything.
func (s *store) peek(key string, limit ratelimit.Limit, u, w int64, n, reserve int) (verdict, time.Duration) {
	if b := s.lookup(key, limit); b != nil {
		if lk := b.lk; lk != nil {
			lk.mu.Lock()
			defer lk.mu.Unlock()
			if !lk.dead {
				keepWindow(lk.st, w)
				return lk.st.peek(usable(limit, reserve), u, n)
			}
		} else if old, ok := loadWord(&b.word); ok {
			v, _ := s.decideWord(old, limit.Burst, usable(limit, reserve), u, w, n)
			return v, 0
		}
	}
	// No bucket, or one dropped (so full): a new bucket's answer.
	if st := s.newState(limit, u, w); st != nil {
		return st.peek(usable(limit, reserve), u, n)
	}
	v, _ := s.decideWord(s.newWord(limit), limit.Burst, usable(limit, reserve), u, w, n)
	return v, 0
}

// noCharge is the charge instant of a refund with the zero ratelimit.Charge: it goes to
// the bucket's current state. No clock reads it (it is before the year −290000).
const noCharge = math.MinInt64

// refund gives n tokens back at u to the bucket of (key, limit), if there is one, for a
// request charged at at (Unix µs), or noCharge.
func (s *store) refund(key string, limit ratelimit.Limit, u, at, w int64, n int) {
	s.adjust(key, limit, func(st lockedState) lockedState {
		keepWindow(st, w)
		st.refund(limit, u, at, n)
		return st
	}, func(old uint64) uint64 {
		return s.refundWord(old, limit, u, at, w, n)
	})
}

// reset makes the bucket of (key, limit), if there is one, as new at u.
func (s *store) reset(key string, limit ratelimit.Limit, u, w int64) {
	s.adjust(key, limit, func(lockedState) lockedState {
		return s.newState(limit, u, w)
	}, func(uint64) uint64 {
		return s.newWord(limit)
	})
}

// adjust changes the bucket of (key, limit), if there is one and it is alive: its state to
// what state makes of it, under its mutex, or its word to what word makes of it, with a
// compare-and-swap. A dropped bucket is full: there is nothing to adjust.
func (s *store) adjust(key string, limit ratelimit.Limit, state func(lockedState) lockedState, word func(uint64) uint64) {
	b := s.lookup(key, limit)
	if b == nil {
		return
	}
	if lk := b.lk; lk != nil {
		lk.mu.Lock()
		defer lk.mu.Unlock()
		if !lk.dead {
			lk.st = state(lk.st)
		}
		return
	}
	for {
		old, ok := loadWord(&b.word)
		if !ok || b.word.CompareAndSwap(old, word(old)) {
			return
		}
	}
}
