package local

import (
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// fixedWindow is the state of a ratelimit.FixedWindow bucket. Windows are W microseconds
// long and aligned to the Unix epoch: window i covers [i·W, (i+1)·W) in Unix microseconds,
// so every instance, and the Redis backend, agrees on where each one starts. The bucket
// remembers the window it last admitted in and how many tokens that window has given out; a
// count of another window is a count of zero.
//
// When the window's index and the count fit in 64 bits together (fixedWindowPacks: up to a
// Burst of 2³⁰ with windows of a second, say), they are the bucket's word and a decision is
// one compare-and-swap; otherwise they live in a fixedWindow, under the bucket's mutex.
type fixedWindow struct {
	window int64 // W, µs
	index  int64 // the window count belongs to
	count  int64 // tokens taken in window index
}

// fixedDecide decides n tokens at u (Unix µs) in windows of w µs, for a bucket that last
// admitted count tokens in window index, and returns the index and count to keep if the
// request is allowed. It admits n tokens when the current window has given out at most
// Burst − n. RetryAfter is the time to the window's end, when the count starts again from
// zero: exact, since a request one microsecond earlier is still in the full window.
func fixedDecide(index, count int64, limit ratelimit.Limit, u, w int64, n int) (int64, int64, verdict) {
	now, elapsed := split(u, w)
	left := micros(w - elapsed) // until the window ends
	if index != now {
		count = 0
	}
	allowed := count+int64(n) <= int64(limit.Burst)
	if allowed {
		count += int64(n)
	}
	v := verdict{allowed: allowed, remaining: max(limit.Burst-int(count), 0)}
	if count > 0 {
		v.reset = left
	}
	if !allowed {
		v.retry = left
	}
	return now, count, v
}

// fixedFull reports whether a bucket that last admitted count tokens in window index is as
// new at u: that window has passed. A time before it does not qualify.
func fixedFull(index, count, u, w int64) bool {
	now, _ := split(u, w)
	return count == 0 || now > index
}

func (fw *fixedWindow) take(limit ratelimit.Limit, u int64, n int, _ time.Duration) (verdict, time.Duration) {
	index, count, v := fixedDecide(fw.index, fw.count, limit, u, fw.window, n)
	if v.allowed {
		fw.index, fw.count = index, count
	}
	return v, 0
}

func (fw *fixedWindow) peek(limit ratelimit.Limit, u int64, n int) (verdict, time.Duration) {
	_, _, v := fixedDecide(fw.index, fw.count, limit, u, fw.window, n)
	return v, 0
}

func (fw *fixedWindow) refund(_ ratelimit.Limit, u, at int64, n int) {
	fw.count = fixedRefund(fw.index, fw.count, u, at, fw.window, n)
}

// fixedRefund returns the count of a bucket that last admitted count tokens in window index,
// with n tokens given back at u to a request charged at at (noCharge: in the current
// window): the count less n, not below zero, if the window that held at is index and still
// the current one. Otherwise the count is left as it is: an ended window took its charges
// with it, and a window the request was not charged in owes it nothing. As
// refund_fixedwindow.lua does.
func fixedRefund(index, count, u, at, w int64, n int) int64 {
	now, _ := split(u, w)
	charged := now
	if at != noCharge {
		charged, _ = split(at, w)
	}
	if now == index && charged == index {
		return max(count-int64(n), 0)
	}
	return count
}

func (fw *fixedWindow) full(_ ratelimit.Limit, u int64) bool {
	return fixedFull(fw.index, fw.count, u, fw.window)
}

// A packed fixed window is index<<k | count, with k = bits.Len(Burst) bits for the count. A
// new bucket's word, 0, holds a count of zero.

// fixedWindowPacks reports whether the windows of limit, w µs long, are few enough to pack
// with a count of up to Burst, for every time from 1970 to 2⁵³ µs (the year 2255), without
// ever making deadWord.
func fixedWindowPacks(limit ratelimit.Limit, w int64) bool {
	k := bits.Len64(uint64(limit.Burst))
	return maxMicros/uint64(w) < 1<<(64-k)-1
}

// takeFixedWindow decides on the packed word of a fixed window of burst tokens, under limit
// (see decideWord), with one compare-and-swap. It reports false, having decided nothing, if
// the bucket is dead, and waits while an AllowAll holds it.
func takeFixedWindow(word *atomic.Uint64, burst int, limit ratelimit.Limit, u, w int64, n int) (verdict, bool) {
	k := bits.Len64(uint64(burst))
	for {
		old := word.Load()
		if old >= lockedWord { // held by an AllowAll, or dead: rare, and out of line
			var ok bool
			if old, ok = waitWord(word); !ok {
				return verdict{}, false
			}
		}
		index, count, v := fixedDecide(int64(old>>k), int64(old&(1<<k-1)), limit, u, w, n)
		if !v.allowed || word.CompareAndSwap(old, uint64(index)<<k|uint64(count)) {
			return v, true
		}
	}
}

// fixedWordRefund is fixedRefund on a packed word.
func fixedWordRefund(old uint64, limit ratelimit.Limit, u, at, w int64, n int) uint64 {
	k := bits.Len64(uint64(limit.Burst))
	index := old >> k
	return index<<k | uint64(fixedRefund(int64(index), int64(old&(1<<k-1)), u, at, w, n))
}

// fixedWindowFull is fixedFull on a packed word.
func fixedWindowFull(word uint64, limit ratelimit.Limit, u, w int64) bool {
	k := bits.Len64(uint64(limit.Burst))
	return fixedFull(int64(word>>k), int64(word&(1<<k-1)), u, w)
}

// split returns the index of the window of length w holding the instant u (both in µs) and
// how far into that window u is: floor division, so that 0 ≤ elapsed < w for any u.
func split(u, w int64) (index, elapsed int64) {
	index, elapsed = u/w, u%w
	if elapsed < 0 {
		index, elapsed = index-1, elapsed+w
	}
	return index, elapsed
}

// maxMicros caps the durations of the window algorithms at 2⁵³ µs (about 285 years), as the
// Redis backend's scripts do, whose numbers are exact up to there.
const maxMicros = args.MaxWindow

// micros converts whole microseconds, at most 2·MaxWindow, to a Duration, capped at
// maxMicros.
func micros(us int64) time.Duration {
	return time.Duration(min(us, maxMicros)) * time.Microsecond
}
