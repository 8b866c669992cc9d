package ratelimittest

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Clock is a clock that moves only when told to. A backend under test reads it through
// Config.Clock (a Redis backend can pass its reading to its script in place of Redis TIME);
// Run and Agree move it. It is safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	system bool // systemClock: time.Now, moved by time.Sleep
}

// NewClock returns a Clock reading 2026-01-01T00:00:00Z: a round instant, so that timelines
// read as offsets from it.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)}
}

// systemClock returns a Clock that reads the system clock and advances by sleeping: in a
// testing/synctest bubble (see inBubble) it moves at once, and together with every limiter
// on the system clock.
func systemClock() *Clock { return &Clock{system: true} }

// Now returns the clock's reading.
func (c *Clock) Now() time.Time {
	if c.system {
		return time.Now()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	if c.system {
		time.Sleep(d)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// inBubble runs f in a testing/synctest bubble whose fake clock has first been moved to the
// instant NewClock reads, so that a limiter made in f, on the system clock, sees the times a
// limiter on a Clock would. In the bubble, time.Sleep is Clock.Advance.
func inBubble(t *testing.T, f func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(NewClock().Now()))
		f(t)
	})
}
