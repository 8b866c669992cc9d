package local

import (
	"sync"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// fixedWindow is the state of a ratelimit.FixedWindow bucket. Windows are W microseconds
// long and aligned to the Unix epoch: window i covers [i·W, (i+1)·W) in Unix microseconds,
// so every instance, and the Redis backend, agrees on where each one starts. The bucket
// remembers the window it last admitted in and how many tokens that window has given out; a
// count of another window is a count of zero.
type fixedWindow struct {
	mu     sync.Mutex
	window int64 // W, µs
	index  int64 // the window count belongs to
	count  int64 // tokens taken in window index
}

func newFixedWindow(limit ratelimit.Limit) state {
	return &fixedWindow{window: windowOf(limit)}
}

// take admits n tokens when the current window has given out at most Burst − n. A denial
// changes nothing. RetryAfter is the time to the window's end, when the count starts again
// from zero: exact, since a request one microsecond earlier is still in the full window.
func (fw *fixedWindow) take(limit ratelimit.Limit, now time.Time, n int) ratelimit.Result {
	index, elapsed := split(now.UnixMicro(), fw.window)
	left := micros(fw.window - elapsed) // until the window ends

	fw.mu.Lock()
	count := int64(0)
	if fw.index == index {
		count = fw.count
	}
	allowed := count+int64(n) <= int64(limit.Burst)
	if allowed {
		count += int64(n)
		fw.index, fw.count = index, count
	}
	fw.mu.Unlock()

	res := ratelimit.Result{Allowed: allowed, Remaining: max(limit.Burst-int(count), 0)}
	if count > 0 {
		res.ResetAfter = left
	}
	if !allowed {
		res.RetryAfter = left
	}
	return res
}

// full: the bucket is as new once its window has passed. A time before the window it
// counts in (t earlier than its last admission) does not qualify.
func (fw *fixedWindow) full(_ ratelimit.Limit, t time.Time) bool {
	index, _ := split(t.UnixMicro(), fw.window)
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.count == 0 || index > fw.index
}

// windowOf returns the window of a limit that AllowN has validated.
func windowOf(limit ratelimit.Limit) int64 {
	w, err := args.Window(limit)
	if err != nil {
		return 1 // not reached: check rejects such limits first
	}
	return w
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
