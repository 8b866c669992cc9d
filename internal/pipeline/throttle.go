package pipeline

import (
	"sync/atomic"
	"time"
)

// LogEvery is the shortest interval between two log lines of a middleware's default error
// handler: a limiter that fails on every request (Redis down, without fallback) is logged
// once a second, with the count of the errors left out since the last line, not once per
// request.
const LogEvery = time.Second

// Throttle lets one report through per LogEvery and counts the others. It is safe for
// concurrent use.
type Throttle struct {
	next    atomic.Int64 // when the next report may go, in ns on the monotonic clock since start
	dropped atomic.Int64
	start   time.Time
}

// NewThrottle returns a Throttle whose first report goes through.
func NewThrottle() *Throttle { return &Throttle{start: time.Now()} }

// Allow reports whether to report now and, when so, how many reports were held back since
// the last one that went through.
func (t *Throttle) Allow() (ok bool, dropped int64) {
	now := int64(time.Since(t.start))
	next := t.next.Load()
	if now < next || !t.next.CompareAndSwap(next, now+int64(LogEvery)) {
		t.dropped.Add(1)
		return false, 0
	}
	return true, t.dropped.Swap(0)
}
