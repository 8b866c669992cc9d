package local

import (
	"math"
	"sync/atomic"

	"github.com/sluice-go/ratelimit"
)

// The token bucket is GCRA with distributed/gcra.lua's arithmetic, operation for operation,
// so that both backends give the same answers to the bit: time is counted in tokens since
// tokenEpochUS (a clock reading of u µs is worth u·Rate/10⁶ tokens), the emission interval
// is then exactly 1 and the tolerance exactly Burst, and the bucket's whole state is its
// theoretical arrival time (TAT), a float64 kept in the bucket's word. A decision is one
// compare-and-swap on it; a denial writes nothing.
//
// The token clock stays below 2⁵³ tokens, where adding a whole number of tokens is exact,
// until the year 2305 at the highest rate the Redis backend accepts, scriptMaxRate. Faster
// buckets, which only this backend accepts, count whole tokens in an int64 up to
// casMaxRate, and above that as golang.org/x/time/rate does (tokenbucket_fast.go).

// scriptMaxRate is the highest Rate whose token bucket decides on gcra.lua's arithmetic:
// the Redis backend's MaxRate.
const scriptMaxRate = 1e6

// newGCRAWord is the word of a token bucket never used: a TAT of −∞, before any now.
const newGCRAWord = 0xFFF0_0000_0000_0000

// takeGCRA decides n tokens at u (Unix µs) on the TAT in word. It reports false, having
// decided nothing, if the bucket is dead.
func takeGCRA(word *atomic.Uint64, limit ratelimit.Limit, u int64, n int) (verdict, bool) {
	us := u - tokenEpochUS
	rate, burst := limit.Rate, float64(limit.Burst)
	now := float64(us) * rate / 1e6
	for {
		old := word.Load()
		if old == deadWord {
			return verdict{}, false
		}
		tat := math.Float64frombits(old)
		if tat < now {
			tat = now // a TAT in the past is a full bucket
		}
		// Taking n tokens moves the TAT by n intervals; the request conforms when the new
		// TAT is at most τ = Burst ahead of now.
		next := tat + float64(n)
		if next-now > burst {
			ahead := tat - now // what the bucket is missing
			return verdict{
				remaining: gcraRemaining(burst, ahead),
				retry:     micros(gcraRetry(us, rate, now, next-burst)),
				reset:     micros(gcraMicros(ahead, rate)),
			}, true
		}
		if word.CompareAndSwap(old, math.Float64bits(next)) {
			ahead := next - now
			return verdict{
				allowed:   true,
				remaining: gcraRemaining(burst, ahead),
				reset:     micros(gcraMicros(ahead, rate)),
			}, true
		}
	}
}

// gcraFull reports whether the TAT in word has passed at u: the bucket is full, and has been
// since its last admission's effect ran out, which came before u.
func gcraFull(word uint64, limit ratelimit.Limit, u int64) bool {
	return math.Float64frombits(word) <= float64(u-tokenEpochUS)*limit.Rate/1e6
}

// gcraRemaining returns the whole tokens a bucket ahead tokens short of full holds: the
// script's max(⌊burst − ahead⌋, 0), with the conversion's truncation for the floor, which
// differs from it only below zero.
func gcraRemaining(burst, ahead float64) int {
	return max(int(burst-ahead), 0)
}

// gcraMicros converts tokens (≥ 0) to the nearest whole microsecond, capped at maxUS: the
// script's min(⌊tokens·10⁶/rate + 0.5⌋, 2⁵³), with the conversion's truncation for the floor
// (the same for a number ≥ 0).
func gcraMicros(tokens, rate float64) int64 {
	us := tokens*1e6/rate + 0.5
	if us >= maxUS {
		return maxUS
	}
	return int64(us)
}

// gcraRetry returns when, in µs from us (µs since tokenEpochUS, worth now tokens), the token
// clock reaches free: the nearest microsecond, then stepped forward while this same
// arithmetic says it is short, so that a caller coming back after exactly that long is let
// in; at least 1.
func gcraRetry(us int64, rate, now, free float64) int64 {
	retry := gcraMicros(free-now, rate)
	for i := 0; i < 3 && retry < maxUS; i++ {
		if reaches(us+retry, rate, free) {
			break
		}
		retry++
	}
	return max(retry, 1)
}

// reaches reports whether the token clock at us µs since tokenEpochUS is at least free, as
// the script computes it: fl(fl(us·rate)/10⁶) ≥ free. A division costs several times a
// multiplication, and the comparison is decided without it unless us·rate lies within 2⁻⁵⁰
// (relative) of free·10⁶: above, the exact quotient is at least free, and so is its
// rounding; below, it is at most free·(1 − 2⁻⁵¹), under the float before free, and so is its
// rounding. Both bounds allow for the roundings of free·10⁶ and of the bounds themselves,
// and hold for free ≥ 2⁻¹⁰⁰⁰, where floats are far from subnormal.
func reaches(us int64, rate, free float64) bool {
	y := float64(us) * rate
	if free >= 0x1p-1000 && y > 0 {
		f := free * 1e6
		if y >= f*(1+0x1p-50) {
			return true
		}
		if y <= f*(1-0x1p-50) {
			return false
		}
	}
	return y/1e6 >= free
}
