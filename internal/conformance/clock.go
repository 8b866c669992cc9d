package conformance

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when told to. Its Now fits local.WithClock, and a Redis
// test can pass its reading to the script in place of Redis TIME. It is safe for concurrent
// use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a Clock reading 2026-01-01T00:00:00Z: a round instant, so that timelines
// read as offsets from it.
func NewClock() *Clock {
	return &Clock{now: time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)}
}

// Now returns the clock's reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
