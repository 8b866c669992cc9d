package local

import (
	"math"
	"sync"
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
type slidingCounter struct {
	mu     sync.Mutex
	window int64 // W, µs
	index  int64 // the window cur belongs to
	cur    int64 // tokens taken in window index
	prev   int64 // tokens taken in window index−1
}

func newSlidingCounter(limit ratelimit.Limit) state {
	return &slidingCounter{window: windowOf(limit)}
}

// counts returns the (prev, cur) counts as seen from window index.
func (sc *slidingCounter) counts(index int64) (prev, cur int64) {
	switch index {
	case sc.index:
		return sc.prev, sc.cur
	case sc.index + 1:
		return sc.cur, 0
	}
	return 0, 0
}

func (sc *slidingCounter) take(limit ratelimit.Limit, now time.Time, n int) ratelimit.Result {
	w, burst, cost := sc.window, int64(limit.Burst), int64(n)
	index, x := split(now.UnixMicro(), w)

	sc.mu.Lock()
	prev, cur := sc.counts(index)
	est := estimate(prev, cur, w, x)
	allowed := est <= float64(burst-cost)
	if allowed {
		cur += cost
		est += float64(cost)
		sc.index, sc.cur, sc.prev = index, cur, prev
	}
	sc.mu.Unlock()

	res := ratelimit.Result{
		Allowed:   allowed,
		Remaining: int(max(min(math.Floor(float64(burst)-est), float64(burst)), 0)),
	}
	// est falls to zero at the end of the window after the last one that counted anything.
	switch {
	case cur > 0:
		res.ResetAfter = micros(2*w - x)
	case prev > 0:
		res.ResetAfter = micros(w - x)
	}
	if !allowed {
		res.RetryAfter = micros(counterRetry(prev, cur, w, x, burst, cost))
	}
	return res
}

// full: the bucket is as new once neither count weighs any more, two windows after the
// one it last admitted in (one, if that window's own count was zero).
func (sc *slidingCounter) full(_ ratelimit.Limit, t time.Time) bool {
	index, _ := split(t.UnixMicro(), sc.window)
	sc.mu.Lock()
	defer sc.mu.Unlock()
	prev, cur := sc.counts(index)
	return prev == 0 && cur == 0 && index >= sc.index
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
