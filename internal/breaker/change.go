package breaker

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"time"

	"github.com/sluice-go/ratelimit/observe"
)

// The defaults both fallbacks give their options.
const (
	DefaultThreshold = 5
	DefaultCooldown  = 250 * time.Millisecond
)

// ErrUnavailable is the error both fallbacks export: the primary cannot decide and there is
// no secondary.
var ErrUnavailable = errors.New("fallback: primary limiter unavailable")

// String returns "closed", "open" or "half-open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Change is one transition of a breaker, as the fallbacks pass it to their state hooks
// (they export it as StateChange, where its documentation is).
type Change struct {
	// From is the state the breaker left.
	From State
	// To is the state the breaker entered.
	To State
	// Err is the failure that opened the breaker, for a change to Open; nil otherwise.
	Err error
}

// Degraded reports whether decisions no longer come from the primary after the change
// (all of them but the probe's): the breaker is open or half-open.
func (c Change) Degraded() bool { return c.To != Closed }

// Recovered reports whether the change closed the breaker: the primary decides again.
func (c Change) Recovered() bool { return c.To == Closed }

// Edge reports whether the change begins an outage (Closed → Open: degraded) or ends it
// (HalfOpen → Closed: recovered). The changes between them, Open → HalfOpen and back for
// each probe while the primary stays down (one pair per cooldown, four a second by
// default), are not edges: a hook that logs only edges logs an outage twice, however long.
func (c Change) Edge() bool { return c.From == Closed || c.To == Closed }

// String describes the change for people, as in
// "circuit breaker closed → open (degraded): distributed: context deadline exceeded".
func (c Change) String() string {
	s := "circuit breaker " + c.From.String() + " → " + c.To.String()
	if c.Degraded() {
		s += " (degraded)"
	} else {
		s += " (recovered)"
	}
	if c.Err != nil {
		s += ": " + c.Err.Error()
	}
	return s
}

// LogValue makes a Change log as a group with the fields from, to, degraded and, when
// set, err, so that slog.Any("breaker", change) gives
// breaker.from=closed breaker.to=open breaker.degraded=true breaker.err="…".
func (c Change) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("from", c.From.String()),
		slog.String("to", c.To.String()),
		slog.Bool("degraded", c.Degraded()),
	}
	if c.Err != nil {
		attrs = append(attrs, slog.String("err", c.Err.Error()))
	}
	return slog.GroupValue(attrs...)
}

// Hooks returns the Hook that tells each of hooks in the order given, recovering a panic
// in any of them, so that a broken hook neither fails the call that changed the state nor
// keeps the others from being told; nil when there is none.
func Hooks(hooks []func(Change)) func(Change) {
	if len(hooks) == 0 {
		return nil
	}
	return func(c Change) {
		for _, hook := range hooks {
			notify(hook, c)
		}
	}
}

func notify(hook func(Change), c Change) {
	defer func() { _ = recover() }()
	hook(c)
}

// Threshold returns the Threshold of a fallback's WithFailureThreshold(n): zero means
// DefaultThreshold, a negative n turns the breaker off.
func Threshold(n int) int32 {
	switch {
	case n == 0:
		n = DefaultThreshold
	case n < 0:
		n = 0
	}
	return int32(min(n, math.MaxInt32))
}

// Cooldown returns the cooldown of a fallback's WithCooldown(d): zero and negative values
// mean DefaultCooldown, as a breaker without one would never try the primary again.
func Cooldown(d time.Duration) time.Duration {
	if d <= 0 {
		return DefaultCooldown
	}
	return d
}

// Clock reads a fallback's time in nanoseconds since its epoch, never negative, from the
// clock of its WithClock, or the monotonic clock without one.
type Clock struct {
	now   func() time.Time // nil: the monotonic clock
	epoch time.Time
}

// NewClock returns a Clock on now, or on the monotonic clock when now is nil.
func NewClock(now func() time.Time) Clock {
	if now != nil {
		return Clock{now: now, epoch: now()}
	}
	return Clock{epoch: time.Now()}
}

// Now returns the nanoseconds since the clock's epoch.
func (c *Clock) Now() int64 {
	if c.now != nil {
		return max(0, int64(c.now().Sub(c.epoch)))
	}
	return int64(time.Since(c.epoch))
}

// IsFailure reports whether err, returned by a primary for a call made with ctx, means
// that the primary failed, rather than an answer (about the arguments, one bucket, a full
// queue), or the end of the caller's own context. A caller that gives up early, or sends
// calls with deadlines too short for any backend, says nothing of the primary's health and
// must not open the breaker for everyone. The primary's own deadline is a failure: it wraps
// ratelimit.ErrTimeout while ctx lives on.
func IsFailure(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	switch observe.Classify(ctx, err) {
	case observe.KindTimeout, observe.KindUnavailable:
		return true
	}
	return false
}
