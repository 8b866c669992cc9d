package local

import (
	"hash/maphash"
	"math"
	"time"

	"github.com/sluice-go/ratelimit"
)

// A token bucket with a warm-up (ratelimit.Limit.Warmup) ramps up after a cold start: from a
// third of Rate and of Burst to all of them, linearly over the warm-up period P. It decides
// as distributed/warmup.lua does, with the same float64 operations in the same order, so
// that both backends give the same answers to the bit. Times are whole microseconds; with
// rate r, burst b, and d µs into the warm-up:
//
//	f(d) = 1/3 + (2/3)·min(d, P)/P                  how warm the bucket is
//	W(d) = r/10⁶ · d(d + P)/(3P)        for d ≤ P   the warm clock: tokens earned since the
//	     = r/10⁶ · (2P/3 + (d − P))     for d > P   warm-up began, the integral of r·f
//	τ(d) = max(1, b·f(d)), b once d ≥ P             what the bucket can hold
//
// The state is the time s the warm-up began and a TAT T on the warm clock: GCRA of burst b
// on the warm clock, whose bucket holds min(τ, b − (T − W)) tokens. A request for n is
// admitted iff ahead = max(T − W, b − τ) ≤ b − n, and then T = max(T, W + (b − τ)) + n. So
// the bucket refills at r·f, and never holds more than τ: its capacity grows, but a drained
// bucket gains nothing from that, and under a saturating load it admits r·f(d), the ramp.
// Past P it is the plain token bucket, on a clock shifted by P/3.
//
// A bucket is cold when it is new, or when max(T, W(P)) + b ≤ W: it has rested, since its
// warm-up ended and since it was last full, long enough to gain another Burst. Then the
// warm-up starts over, s = now and T = 0, whatever the decision: a cold request for more
// than τ(0) must see the ramp move, or it would wait for ever. A warm-up, once begun, runs to
// its end, so that a request denied during it is admitted at its RetryAfter (and for a
// Burst's refill after), which could not be promised if resting made it start over.
//
// W and τ never decrease as d grows, in float64 too (each operation is monotone), so the
// test, once passed, stays passed: RetryAfter and ResetAfter (the first moment T ≤ W, from
// which the bucket holds all it can) are the least whole microseconds at which their tests
// hold, found by searching the integers with the very tests the decision makes. The state
// is more than one word, so a warm bucket decides under its mutex; plain token buckets keep
// their compare-and-swap.

// hash returns the hash of the bucket of (key, limit): key's, and for a limit with a warm-up,
// key's mixed with the warm-up by a bijection that leaves 0 alone (a quota's with its period). A
// table's lookup compares the hash, then the key, rate and burst (table.find): two buckets of one
// key, rate and burst differ in warm-up, so in hash, so the lookup tells them apart without
// comparing the warm-up itself, which would make it too costly to inline into the hot path.
func (s *store) hash(key string, limit *ratelimit.Limit) uint64 {
	h := maphash.String(s.seed, key)
	if limit.Warmup != 0 {
		h ^= uint64(limit.Warmup) * 0x9E3779B97F4A7C15 // an odd multiplier: a bijection mod 2⁶⁴
	}
	if limit.Algorithm == ratelimit.CalendarQuota { // no warm-up: its period, likewise
		h ^= s.periodCode(limit.Period) * 0x9E3779B97F4A7C15
	}
	return h
}

// warmBucket is the state of a token bucket with a warm-up. Its methods read the warm-up
// from period rather than from the limit they are given, which a sweep makes from the
// bucket's rate and burst alone.
type warmBucket struct {
	period time.Duration // the limit's Warmup
	burst  int           // the limit's Burst: a request that keeps a reserve asks with less
	start  int64         // s: when the warm-up began, µs since tokenEpochUS
	tat    float64       // on the warm clock, in tokens since start
	used   bool          // false for a bucket never used: it is cold
}

// warmClock returns W(d) for a warm-up of p µs at rate r: d(d + p)/(3p) warm microseconds
// up to p, then one a microsecond, in tokens. The conversions keep the compiler from fusing
// a multiply and an add, which would round differently from Lua.
func warmClock(d, p, r float64) float64 {
	m := min(d, p)
	return float64(float64(float64(m*(m+p))/(3*p))+(d-m)) * r / 1e6
}

// warmTolerance returns τ(d) for a warm-up of p µs and a burst of b: b·(p + 2d)/(3p), at
// least 1 and at most b; b itself from p on, where the rounded formula could miss it and
// deny a request for the whole burst for ever.
func warmTolerance(d, p, b float64) float64 {
	if d >= p {
		return b
	}
	return max(1, min(b, b*float64(p+float64(2*d))/(3*p)))
}

// warmAhead returns how far short of b tokens a bucket whose TAT is tat is, d µs into the
// warm-up: max(T − W, b − τ). A request for n is admitted iff warmAhead ≤ b − n, the right
// side whole and exact, as gcra.lua's ahead ≤ room.
func warmAhead(tat, d, p, r, b float64) float64 {
	return max(tat-warmClock(d, p, r), b-warmTolerance(d, p, b))
}

// warmInverse returns, in real numbers, where the warm clock reads tokens (≥ 0): the root
// of d(d + p)/(3p) = a in its stable form 6pa/(√(p² + 12pa) + p), or a + p/3 past p. It only
// guides the searches, whose answers do not depend on it.
func warmInverse(tokens, p, r float64) float64 {
	a := max(tokens, 0) * 1e6 / r
	if a <= 2*p/3 {
		return 6 * p * a / (math.Sqrt(p*p+12*p*a) + p)
	}
	return a + p/3
}

// guessUS turns a guess of microseconds from now into a whole number within [lo, maxUS].
func guessUS(us float64, lo int64) int64 {
	if !(us > float64(lo)) { // NaN too
		return lo
	}
	if us >= maxUS {
		return maxUS
	}
	return int64(math.Ceil(us))
}

// leastUS returns the least whole y in (lo, maxUS] at which ok holds, given that it does not
// at lo and never stops holding once it does; maxUS if it holds nowhere before. The search
// starts at guess and moves away from it in doubling steps until it brackets the answer,
// then halves the bracket, so that a good guess costs a few tests and a bad one at most
// about 110.
func leastUS(lo, guess int64, ok func(y int64) bool) int64 {
	hi := min(max(guess, lo+1), maxUS)
	if ok(hi) {
		for step := int64(1); hi-step > lo; step *= 2 {
			if !ok(hi - step) {
				lo = hi - step
				break
			}
			hi -= step
		}
	} else {
		lo = hi
		for step := int64(1); ; step *= 2 {
			if lo >= maxUS {
				return maxUS
			}
			c := min(lo+step, maxUS)
			if ok(c) {
				hi = c
				break
			}
			lo = c
		}
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// take decides n tokens at u under limit, whose Burst is the bucket's or, for a request that
// must leave a reserve, less: that usable part bounds the admission, its Remaining and its
// RetryAfter, while the warm clock, τ, the TAT and the cold test keep the bucket's own burst
// (see warmup.lua).
func (wb *warmBucket) take(limit ratelimit.Limit, u int64, n int, _ time.Duration) (verdict, time.Duration) {
	us := u - tokenEpochUS
	p, r, b, cost := float64(wb.period.Microseconds()), limit.Rate, float64(wb.burst), float64(n)
	usable := float64(limit.Burst)
	// A clock that went back (only an injected one does) reads as the start of the warm-up.
	d := max(us-wb.start, 0)
	if !wb.used || wb.cold(float64(d), p, r, b) {
		wb.start, wb.tat, wb.used, d = us, 0, true, 0
	}
	x := float64(d)
	w, tol := warmClock(x, p, r), warmTolerance(x, p, b)
	ahead := max(wb.tat-w, b-tol)
	allowed := ahead <= usable-cost
	if allowed {
		wb.tat = max(wb.tat, w+(b-tol)) + cost
		ahead = wb.tat - w
	}
	tat := wb.tat
	v := verdict{allowed: allowed, remaining: max(int(usable-ahead), 0)}
	if tat > w {
		v.reset = micros(leastUS(0, guessUS(warmInverse(tat, p, r)-x, 0), func(y int64) bool {
			return tat <= warmClock(float64(d+y), p, r)
		}))
	}
	if !allowed {
		v.retry = micros(leastUS(0, warmRetryGuess(tat, x, p, r, b, cost+(b-usable)), func(y int64) bool {
			return warmAhead(tat, float64(d+y), p, r, b) <= usable-cost
		}))
	}
	return v, 0
}

// cold reports whether a bucket d µs into its warm-up has rested long enough to start it
// over: max(T, W(P)) + b ≤ W(d).
func (wb *warmBucket) cold(d, p, r, b float64) bool {
	return max(wb.tat, warmClock(p, p, r))+b <= warmClock(d, p, r)
}

// warmRetryGuess guesses, in µs from d = x, when a request for n is admitted (n counting its
// reserve): once τ has reached n, and W has reached tat − b + n.
func warmRetryGuess(tat, x, p, r, b, n float64) int64 {
	at := warmInverse(tat-b+n, p, r)
	if n > 1 {
		at = max(at, min((3*p*n/b-p)/2, p))
	}
	return guessUS(at-x, 1)
}

// peek is take on a copy: what take would answer, changing nothing, not even the warm-up a
// cold bucket would begin.
func (wb *warmBucket) peek(limit ratelimit.Limit, u int64, n int) (verdict, time.Duration) {
	c := *wb
	return c.take(limit, u, n, unbounded)
}

// refund gives n tokens back at u: the TAT moves back by n on the warm clock, never below
// W + (b − τ), where the bucket holds all it can; the warm-up stays as it is. A bucket that
// is cold (or new) is as good as new: nothing to give back. As refund_warmup.lua does.
func (wb *warmBucket) refund(limit ratelimit.Limit, u, _ int64, n int) {
	p, r, b := float64(wb.period.Microseconds()), limit.Rate, float64(limit.Burst)
	d := float64(max(u-tokenEpochUS-wb.start, 0))
	if !wb.used || wb.cold(d, p, r, b) {
		return
	}
	wb.tat = max(wb.tat-float64(n), warmClock(d, p, r)+(b-warmTolerance(d, p, b)))
}

// full reports whether the bucket is cold at u, and so as good as new. Asked about a time
// before its warm-up began, or before its last admission, it is not.
func (wb *warmBucket) full(limit ratelimit.Limit, u int64) bool {
	d := u - tokenEpochUS - wb.start
	return !wb.used || (d >= 0 &&
		wb.cold(float64(d), float64(wb.period.Microseconds()), limit.Rate, float64(limit.Burst)))
}
