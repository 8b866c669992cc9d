package distributed

import (
	"context"
	"sync/atomic"
	"time"
)

// The limiter's own deadline (WithTimeout) is on every call, and context.WithTimeoutCause
// would cost each one a runtime timer, a goroutine-safe cancel context and four or five
// allocations: about a microsecond, more than the rest of the client's work on a decision.
// A call takes instead a bounded context, which holds its exact deadline (the one go-redis
// sets on the socket) and a Done channel it shares with every call whose deadline falls in
// the same tick: the channel is closed by one timer at the tick's end, at most a tick after
// the deadline. Under load one tick serves many calls: fifty at 50,000 decisions a second.

// maxTick is the longest tick: how late a call's Done may close after its deadline.
const maxTick = time.Millisecond

// bound hands out the bounded contexts of one limiter's deadline. Its zero value is not
// ready; newBound makes one.
type bound struct {
	timeout time.Duration
	width   time.Duration        // of a tick
	last    atomic.Pointer[tick] // the tick handed out last, which later calls may share
}

// tick is one Done channel and the moment its timer closes it.
type tick struct {
	end  time.Time
	done chan struct{}
}

// newBound returns the bound of timeout, positive. A tick is a sixteenth of the timeout, at
// most maxTick: short next to the deadline it rounds up.
func newBound(timeout time.Duration) *bound {
	return &bound{timeout: timeout, width: min(max(timeout/16, 1), maxTick)}
}

// bounded is a call's context under the limiter's deadline: the values of the caller's
// context (without its cancellation: see Limiter.run), the deadline, and its tick's Done channel.
type bounded struct {
	values   context.Context
	deadline time.Time
	done     chan struct{}
}

// set makes c the context of a call that starts at now, carrying the values of values (the
// caller's context, which call has stripped of its cancellation).
func (b *bound) set(c *bounded, values context.Context, now time.Time) {
	deadline := now.Add(b.timeout)
	t := b.last.Load()
	if t == nil || t.end.Before(deadline) {
		t = &tick{end: deadline.Add(b.width), done: make(chan struct{})}
		time.AfterFunc(t.end.Sub(now), t.close)
		b.last.Store(t)
	}
	c.values, c.deadline, c.done = values, deadline, t.done
}

func (t *tick) close() { close(t.done) }

func (c *bounded) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *bounded) Done() <-chan struct{}       { return c.done }
func (c *bounded) Value(key any) any           { return c.values.Value(key) }

// Err reports context.DeadlineExceeded once Done is closed, as a context's Err must; cause
// reports the limiter's deadline as soon as it has passed.
func (c *bounded) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// cause returns errTimeout once the deadline has passed, or nil.
func (c *bounded) cause() error {
	if c.Err() != nil || !time.Now().Before(c.deadline) {
		return errTimeout
	}
	return nil
}

// cause returns why ctx, a call's context (bounded, or the caller's own when it ends
// first), has ended, or nil.
func cause(ctx context.Context) error {
	if c, ok := ctx.(*bounded); ok {
		return c.cause()
	}
	return context.Cause(ctx)
}
