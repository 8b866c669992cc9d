package local

import (
	"runtime"
	"sync/atomic"

	"github.com/sluice-go/ratelimit"
)

// The buckets whose whole state is their word (see bucket): what each algorithm does to it.

// loadWord returns the state in word, waiting while an AllowAll holds it; it reports false
// if the bucket is dead. The decisions' loops inline its first test.
func loadWord(word *atomic.Uint64) (uint64, bool) {
	if old := word.Load(); old < lockedWord {
		return old, true
	}
	return waitWord(word)
}

// waitWord is loadWord for a word that was held or dead.
func waitWord(word *atomic.Uint64) (uint64, bool) {
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

// decideWord decides n tokens at u on the state old of a bucket of burst tokens, under limit
// (its own, or with Burst less a reserve), and returns the verdict and the state to store if
// the request is allowed: store.take's decision, made on a copy of the word, so that the
// algorithms are written once, as their compare-and-swap loops. w is the window of the
// window algorithms, in µs.
func (s *store) decideWord(old uint64, burst int, limit ratelimit.Limit, u, w int64, n int) (verdict, uint64) {
	var word atomic.Uint64
	word.Store(old)
	var v verdict
	switch {
	case limit.Algorithm == ratelimit.FixedWindow:
		v, _ = takeFixedWindow(&word, burst, limit, u, w, n)
	case limit.Algorithm == ratelimit.SlidingWindowCounter:
		v, _ = takeSlidingCounter(&word, burst, limit, u, w, n)
	default:
		v, _ = takeToken(&word, limit.Rate, limit.Burst, u, n)
	}
	return v, word.Load()
}

// refundWord returns the state old with n tokens given back at u to a request charged at at,
// or noCharge (see Limiter.Refund).
func (s *store) refundWord(old uint64, limit ratelimit.Limit, u, at, w int64, n int) uint64 {
	switch {
	case limit.Algorithm == ratelimit.FixedWindow:
		return fixedWordRefund(old, limit, u, at, w, n)
	case limit.Algorithm == ratelimit.SlidingWindowCounter:
		return counterWordRefund(old, limit, u, at, w, n)
	case limit.Rate <= scriptMaxRate:
		return gcraRefund(old, limit, u, n)
	}
	return wholeRefund(old, limit, u, n)
}

// newWord returns the word of a new bucket of limit: a TAT of −∞ for the token bucket on the
// script's arithmetic, 0 for the others (a whole-token TAT far in the past, counts of zero).
func (s *store) newWord(limit ratelimit.Limit) uint64 {
	if limit.Algorithm == ratelimit.TokenBucket && limit.Rate <= scriptMaxRate {
		return newGCRAWord
	}
	return 0
}
