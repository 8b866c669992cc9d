package local

import (
	"time"

	"github.com/sluice-go/ratelimit"
)

// slidingLog is the state of a ratelimit.SlidingWindowLog bucket: the time of every token
// admitted in the last window, oldest first, in a ring buffer that grows with use up to
// Burst entries (8 bytes each) and allocates nothing once it has.
//
// At time u the window holds the entries later than u − W; an entry exactly W old has left.
// A request for n tokens is allowed when the window holds at most Burst − n, and adds n
// entries at u. Times are whole microseconds, as in the Redis script, and W is
// args.Window's, so that both backends answer alike to the microsecond.
//
// It decides under its bucket's mutex.
type slidingLog struct {
	window int64   // W in microseconds
	times  []int64 // the ring: Unix microseconds, times[head] the oldest
	head   int
	n      int // entries held
}

// full reports whether the log is empty at u: its newest entry has left the window. Asked
// about a time before the newest entry, it is not.
func (sl *slidingLog) full(_ ratelimit.Limit, u int64) bool {
	return sl.n == 0 || sl.newest()+sl.window <= u
}

// take decides n tokens at u (Unix µs). A clock that reads earlier than the newest entry
// (only an injected one can) is taken to stand still at that entry, which keeps the log in
// order.
func (sl *slidingLog) take(limit ratelimit.Limit, u int64, n int, _ time.Duration) (verdict, time.Duration) {
	u, gone, v := sl.decide(limit, u, n)
	sl.head = (sl.head + gone) % max(len(sl.times), 1)
	sl.n -= gone
	if v.allowed {
		sl.add(u, n, limit.Burst)
	}
	return v, 0
}

func (sl *slidingLog) peek(limit ratelimit.Limit, u int64, n int) (verdict, time.Duration) {
	_, _, v := sl.decide(limit, u, n)
	return v, 0
}

// refund drops, at u, up to n entries recorded at at, the instant the refunded request was
// charged, if they are still in the window: the ones it added, or others of the same
// microsecond, which are interchangeable with them. Every window then holds only the times
// of requests that were not refunded, as if the refunded one had never come. With noCharge
// it drops the n newest entries still in the window (an operator's refund). As
// refund_slidinglog.lua does.
func (sl *slidingLog) refund(_ ratelimit.Limit, u, at int64, n int) {
	if at == noCharge {
		for ; n > 0 && sl.n > 0 && sl.newest() > u-sl.window; n-- {
			sl.n--
		}
		return
	}
	if at <= u-sl.window {
		return // gone already
	}
	// The entries at at are consecutive: find them, then move the newer ones down over
	// the k dropped.
	first := 0
	for first < sl.n && sl.at(first) < at {
		first++
	}
	k := 0
	for first+k < sl.n && k < n && sl.at(first+k) == at {
		k++
	}
	if k == 0 {
		return
	}
	for i := first + k; i < sl.n; i++ {
		sl.times[(sl.head+i-k)%len(sl.times)] = sl.at(i)
	}
	sl.n -= k
}

// decide decides n tokens at u and changes nothing: it returns the time to record entries
// at, how many of the oldest entries have left the window, and the verdict.
func (sl *slidingLog) decide(limit ratelimit.Limit, u int64, n int) (int64, int, verdict) {
	if sl.n > 0 {
		u = max(u, sl.newest())
	}
	gone := 0
	for gone < sl.n && sl.at(gone) <= u-sl.window {
		gone++
	}
	count := sl.n - gone
	if count+n <= limit.Burst {
		// The newest entry is now u: the window is empty again W from now.
		return u, gone, verdict{
			allowed:   true,
			remaining: limit.Burst - count - n,
			reset:     micros(sl.window),
		}
	}
	// Denied: k = count + n − Burst entries must leave first, the k-th oldest last.
	k := count + n - limit.Burst
	return u, gone, verdict{
		remaining: max(limit.Burst-count, 0), // below a reserve, nothing
		retry:     micros(sl.at(gone+k-1) + sl.window - u),
		reset:     micros(sl.newest() + sl.window - u),
	}
}

// at returns the i-th oldest entry, 0 ≤ i < sl.n.
func (sl *slidingLog) at(i int) int64 { return sl.times[(sl.head+i)%len(sl.times)] }

// newest returns the newest entry; sl.n > 0.
func (sl *slidingLog) newest() int64 { return sl.at(sl.n - 1) }

// add appends n entries at u, growing the ring (doubling, up to burst) if they do not fit.
func (sl *slidingLog) add(u int64, n, burst int) {
	if sl.n+n > len(sl.times) {
		grown := make([]int64, min(max(2*len(sl.times), sl.n+n, 8), burst))
		for i := range sl.n {
			grown[i] = sl.at(i)
		}
		sl.times, sl.head = grown, 0
	}
	for range n {
		sl.times[(sl.head+sl.n)%len(sl.times)] = u
		sl.n++
	}
}
