package local

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
)

// slidingCounter is the state of a ratelimit.SlidingWindowCounter bucket: the counts of two
// consecutive fixed windows (aligned to the Unix epoch, as in fixedWindow). At x µs into
// window i, the sliding window (u − W, u] covers the last W − x µs of window i−1 and the
// first x of window i; assuming window i−1's requests were spread evenly, it holds
//
//	est = prev·(W − x)/W + cur
//
// and a request for n is admitted when est + n ≤ Burst, tested as est ≤ Burst − n: the right
// side is exact, where the sum would round near Burst = 2^52. The Redis script computes est
// with the same float64 operations in the same order, so both backends decide alike to the
// bit.
//
// When the window's index and both counts fit in 64 bits (slidingCounterPacks: roughly,
// Burst·Rate up to 2³¹ per second), they are the bucket's word and a decision is one
// compare-and-swap; otherwise they live in a slidingCounter, under the bucket's mutex.
type slidingCounter struct {
	window int64 // W, µs
	index  int64 // the window cur belongs to
	cur    int64 // tokens taken in window index
	prev   int64 // tokens taken in window index−1
}

// counterDecide decides n tokens at u (Unix µs) in windows of w µs, for a bucket whose
// counts are cur in window index and prev in the one before, and returns the index and
// counts to keep if the request is allowed.
func counterDecide(index, cur, prev int64, limit ratelimit.Limit, u, w int64, n int) (int64, int64, int64, verdict) {
	burst, cost := int64(limit.Burst), int64(n)
	now, x := split(u, w)
	prev, cur = countsAt(index, cur, prev, now)
	est := estimate(prev, cur, w, x)
	allowed := est <= float64(burst-cost)
	if allowed {
		cur += cost
		est += float64(cost)
	}
	v := verdict{
		allowed:   allowed,
		remaining: int(max(min(math.Floor(float64(burst)-est), float64(burst)), 0)),
	}
	// est falls to zero at the end of the window after the last one that counted anything.
	switch {
	case cur > 0:
		v.reset = micros(2*w - x)
	case prev > 0:
		v.reset = micros(w - x)
	}
	if !allowed {
		v.retry = micros(counterRetry(prev, cur, w, x, burst, cost))
	}
	return now, cur, prev, v
}

// countsAt returns the (prev, cur) counts of a bucket holding cur in window index and prev
// in the one before, as seen from window now.
func countsAt(index, cur, prev, now int64) (int64, int64) {
	switch now {
	case index:
		return prev, cur
	case index + 1:
		return cur, 0
	}
	return 0, 0
}

// counterFull: the bucket is as new once neither count weighs any more, two windows after
// the one it last admitted in (one, if that window's own count was zero).
func counterFull(index, cur, prev, u, w int64) bool {
	now, _ := split(u, w)
	prev, cur = countsAt(index, cur, prev, now)
	return prev == 0 && cur == 0 && now >= index
}

func (sc *slidingCounter) take(limit ratelimit.Limit, u int64, n int, _ time.Duration) (verdict, time.Duration) {
	index, cur, prev, v := counterDecide(sc.index, sc.cur, sc.prev, limit, u, sc.window, n)
	if v.allowed {
		sc.index, sc.cur, sc.prev = index, cur, prev
	}
	return v, 0
}

func (sc *slidingCounter) peek(limit ratelimit.Limit, u int64, n int) (verdict, time.Duration) {
	_, _, _, v := counterDecide(sc.index, sc.cur, sc.prev, limit, u, sc.window, n)
	return v, 0
}

func (sc *slidingCounter) refund(_ ratelimit.Limit, u, at int64, n int) {
	sc.cur, sc.prev = counterRefund(sc.index, sc.cur, sc.prev, u, at, sc.window, n)
}

// counterRefund returns the counts (cur, prev) of a bucket that counts cur in window index
// and prev in the one before, with n tokens given back at u to a request charged at at
// (noCharge: in the current window). The count of the window that held at loses n, not
// below zero, while that window weighs in the estimate at u: when it is the current window
// or the previous one. That count is cur if the bucket has admitted nothing in a later
// window since, prev if it has admitted in the next one. Other counts are left as they are:
// an older window weighs nothing any more, and one the request was not charged in owes it
// nothing. As refund_slidingcounter.lua does.
//
// Taking the request's n from the very count it was added to leaves the counts of the other
// requests, as if it had never come; est only grows with the counts, so the bucket then
// admits no more than it would have without the request. Taking it from another window's
// count (the current one, for a request charged in the previous window) would free room
// that no admitted request had taken.
func counterRefund(index, cur, prev, u, at, w int64, n int) (int64, int64) {
	now, _ := split(u, w)
	charged := now
	if at != noCharge {
		charged, _ = split(at, w)
	}
	switch {
	case charged < now-1 || charged > now:
	case index == charged:
		cur = max(cur-int64(n), 0)
	case index == charged+1:
		prev = max(prev-int64(n), 0)
	}
	return cur, prev
}

func (sc *slidingCounter) full(_ ratelimit.Limit, u int64) bool {
	return counterFull(sc.index, sc.cur, sc.prev, u, sc.window)
}

// A packed sliding counter is index<<2k | prev<<k | cur, with k = bits.Len(Burst) bits for
// each count. A new bucket's word, 0, holds counts of zero.

// slidingCounterPacks reports whether the windows of limit, w µs long, are few enough to pack
// with two counts of up to Burst, for every time from 1970 to 2⁵³ µs (the year 2255),
// without ever making deadWord.
func slidingCounterPacks(limit ratelimit.Limit, w int64) bool {
	k := bits.Len64(uint64(limit.Burst))
	return 2*k < 64 && maxMicros/uint64(w) < 1<<(64-2*k)-1
}

// takeSlidingCounter decides on the packed word of a sliding counter of burst tokens, under
// limit (see decideWord), with one compare-and-swap. It reports false, having decided
// nothing, if the bucket is dead, and waits while an AllowAll holds it.
func takeSlidingCounter(word *atomic.Uint64, burst int, limit ratelimit.Limit, u, w int64, n int) (verdict, bool) {
	k := bits.Len64(uint64(burst))
	mask := uint64(1)<<k - 1
	for {
		old := word.Load()
		if old >= lockedWord { // held by an AllowAll, or dead: rare, and out of line
			var ok bool
			if old, ok = waitWord(word); !ok {
				return verdict{}, false
			}
		}
		index, cur, prev, v := counterDecide(int64(old>>(2*k)), int64(old&mask), int64(old>>k&mask), limit, u, w, n)
		if !v.allowed || word.CompareAndSwap(old, uint64(index)<<(2*k)|uint64(prev)<<k|uint64(cur)) {
			return v, true
		}
	}
}

// counterWordRefund is counterRefund on a packed word.
func counterWordRefund(old uint64, limit ratelimit.Limit, u, at, w int64, n int) uint64 {
	k := bits.Len64(uint64(limit.Burst))
	mask := uint64(1)<<k - 1
	index := old >> (2 * k)
	cur, prev := counterRefund(int64(index), int64(old&mask), int64(old>>k&mask), u, at, w, n)
	return index<<(2*k) | uint64(prev)<<k | uint64(cur)
}

// slidingCounterFull is counterFull on a packed word.
func slidingCounterFull(word uint64, limit ratelimit.Limit, u, w int64) bool {
	k := bits.Len64(uint64(limit.Burst))
	mask := uint64(1)<<k - 1
	return counterFull(int64(word>>(2*k)), int64(word&mask), int64(word>>k&mask), u, w)
}

// estimate is est = prev·(W − x)/W + cur, in exactly the order of operations of
// slidingcounter.lua. The conversions keep the compiler from fusing a multiply and an add,
// which would round differently from Lua.
func estimate(prev, cur, w, x int64) float64 {
	return float64(float64(prev)*float64(w-x)/float64(w)) + float64(cur)
}

// retrySteps bounds the search around counterRetry's first guess, in either direction.
const retrySteps = 4

// counterRetry returns the least whole d ≥ 1 µs after which a request for n, denied now (x µs
// into the current window, with counts prev and cur), would be admitted if nothing else
// used the bucket. A point in the future is a window k = 0, 1 or 2 after the current one
// and an offset y in it; the counts seen from window k are (prev, cur), (cur, 0), (0, 0),
// so est only falls as time passes and the first admitted point is well defined.
//
// The guess solves est + n = Burst in real numbers: within this window when cur + n ≤ Burst
// (prev·(W − y)/W ≤ Burst − cur − n), otherwise in the next (cur·(W − y)/W ≤ Burst − n).
// Then it moves a few microseconds either way, testing with estimate itself, to the first
// point the float arithmetic admits. Should that be out of reach (only at windows of
// decades with huge bursts), it answers the start of window 2, where est is 0.
func counterRetry(prev, cur, w, x, burst, n int64) int64 {
	var k, y int64
	if cur+n <= burst {
		k, y = 0, ceilWithin(float64(w)-float64(float64(burst-cur-n)*float64(w)/float64(prev)), x+1, w)
	} else {
		k, y = 1, ceilWithin(float64(w)-float64(float64(burst-n)*float64(w)/float64(cur)), 0, w)
	}
	if y == w {
		k, y = k+1, 0
	}
	admits := func(k, y int64) bool {
		p, c := prev, cur
		for range k {
			p, c = c, 0
		}
		return estimate(p, c, w, y) <= float64(burst-n)
	}
	for i := 0; i < retrySteps && !admits(k, y); i++ {
		if y++; y == w {
			k, y = k+1, 0
		}
	}
	if !admits(k, y) {
		k, y = 2, 0
	}
	for range retrySteps {
		bk, by := k, y-1
		if by < 0 {
			bk, by = k-1, w-1
		}
		if bk < 0 || (bk == 0 && by <= x) || !admits(bk, by) {
			break
		}
		k, y = bk, by
	}
	return k*w + y - x
}

// ceilWithin rounds f up and clamps it to [lo, hi]; a NaN gives lo.
func ceilWithin(f float64, lo, hi int64) int64 {
	f = math.Ceil(f)
	switch {
	case !(f >= float64(lo)):
		return lo
	case f >= float64(hi):
		return hi
	}
	return int64(f)
}
