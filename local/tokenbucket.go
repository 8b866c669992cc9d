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

// takeGCRA decides n tokens at u (Unix µs) on the TAT in word, with one compare-and-swap.
// It reports false, having decided nothing, if the bucket is dead, and waits while an
// AllowAll holds it.
func takeGCRA(word *atomic.Uint64, rate float64, capacity int, u int64, n int) (verdict, bool) {
	us := u - tokenEpochUS
	burst := float64(capacity)
	now := float64(us) * rate / 1e6
	for {
		old := word.Load()
		if old >= lockedWord { // held by an AllowAll, or dead: rare, and out of line
			var ok bool
			if old, ok = waitWord(word); !ok {
				return verdict{}, false
			}
		}
		tat := math.Float64frombits(old)
		if tat < now {
			tat = now // a TAT in the past is a full bucket
		}
		// Taking n tokens moves the TAT by n intervals; the request conforms when the new
		// TAT is at most τ = Burst ahead of now: tat + n − now ≤ Burst, tested as the
		// script does, ahead ≤ room, room being whole and exact. Summing first would round
		// once more, and near Burst = 2⁵² admit a request right after a drain.
		ahead := tat - now // what the bucket is missing
		room := burst - float64(n)
		if ahead > room {
			return verdict{
				remaining: gcraRemaining(burst, ahead),
				retry:     micros(gcraRetry(us, rate, tat, ahead, room)),
				reset:     micros(gcraMicros(ahead, rate)),
			}, true
		}
		next := tat + float64(n)
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

// gcraRefund returns the TAT word old with n tokens given back at u: the TAT moves back by
// n, and a TAT that reaches now is a full bucket, a new one's word (refund_gcra.lua deletes
// the key).
func gcraRefund(old uint64, limit ratelimit.Limit, u int64, n int) uint64 {
	tat := math.Float64frombits(old) - float64(n)
	if tat <= float64(u-tokenEpochUS)*limit.Rate/1e6 {
		return newGCRAWord
	}
	return math.Float64bits(tat)
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

// gcraRetry returns when, in µs from us (µs since tokenEpochUS), a bucket whose TAT is tat,
// ahead tokens short of full, has room for a request that needs it at most room short: the
// nearest microsecond to ahead − room tokens, then stepped forward while the script's own
// test, tat − clock ≤ room, says it is not yet, so that a caller coming back after exactly
// that long is let in; at least 1.
func gcraRetry(us int64, rate, tat, ahead, room float64) int64 {
	retry := gcraMicros(ahead-room, rate)
	for i := 0; i < 3 && retry < maxUS; i++ {
		if tat-float64(us+retry)*rate/1e6 <= room {
			break
		}
		retry++
	}
	return max(retry, 1)
}
