package local

import (
	"runtime"
	"sync/atomic"

	"github.com/sluice-go/ratelimit"
)

// The buckets whose whole state is their word (see bucket): what each algorithm does to it.

// takeWord decides n tokens at u (Unix µs) on word with one compare-and-swap. It reports
// false, having decided nothing, if the bucket is dead. takeGCRA is the same loop for the
// commonest buckets, without the algorithm's switch.
func (s *store) takeWord(word *atomic.Uint64, limit ratelimit.Limit, u, w int64, n int) (verdict, bool) {
	for {
		old, ok := loadWord(word)
		if !ok {
			return verdict{}, false
		}
		v, next := s.decideWord(old, limit, u, w, n)
		if !v.allowed || word.CompareAndSwap(old, next) {
			return v, true
		}
	}
}

// loadWord returns the state in word, waiting while an AllowAll holds it; it reports false
// if the bucket is dead.
func loadWord(word *atomic.Uint64) (uint64, bool) {
	for {
		old := word.Load()
		if old < lockedWord {
			return old, true
		}
		if old == deadWord {
			return 0, false
		}
		runtime.Gosched() // an AllowAll holds the bucket for a moment
	}
}

// decideWord decides n tokens at u on the state old, and returns the verdict and the state
// to store if the request is allowed. w is the window of the window algorithms, in µs.
func (s *store) decideWord(old uint64, limit ratelimit.Limit, u, w int64, n int) (verdict, uint64) {
	switch {
	case s.alg == ratelimit.FixedWindow:
		return fixedWordDecide(old, limit, u, w, n)
	case s.alg == ratelimit.SlidingWindowCounter:
		return counterWordDecide(old, limit, u, w, n)
	case limit.Rate <= scriptMaxRate:
		return gcraDecide(old, limit, u, n)
	}
	return wholeDecide(old, limit, u, n)
}

// refundWord returns the state old with n tokens given back at u (see Limiter.Refund).
func (s *store) refundWord(old uint64, limit ratelimit.Limit, u, w int64, n int) uint64 {
	switch {
	case s.alg == ratelimit.FixedWindow:
		return fixedWordRefund(old, limit, u, w, n)
	case s.alg == ratelimit.SlidingWindowCounter:
		return counterWordRefund(old, limit, u, w, n)
	case limit.Rate <= scriptMaxRate:
		return gcraRefund(old, limit, u, n)
	}
	return wholeRefund(old, limit, u, n)
}

// newWord returns the word of a new bucket of limit: a TAT of −∞ for the token bucket on the
// script's arithmetic, 0 for the others (a whole-token TAT far in the past, counts of zero).
func (s *store) newWord(limit ratelimit.Limit) uint64 {
	if s.alg == ratelimit.TokenBucket && limit.Rate <= scriptMaxRate {
		return newGCRAWord
	}
	return 0
}
