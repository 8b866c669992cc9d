package fallback

import (
	"log/slog"
	"strconv"

	"github.com/sluice-go/ratelimit/internal/breaker"
)

// State is the state of a Limiter's circuit breaker. Its values are internal/breaker's.
type State uint8

const (
	// Closed is the normal state, and the zero State: every call goes to the primary.
	Closed = State(breaker.Closed)
	// Open means the primary failed too often: it is not called until the cooldown ends,
	// and every decision comes from the secondary (or fails with ErrUnavailable).
	Open = State(breaker.Open)
	// HalfOpen means the cooldown has ended: one call, the probe, goes to the primary, and
	// the others to the secondary until the probe's answer closes or reopens the breaker.
	HalfOpen = State(breaker.HalfOpen)
)

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

// StateChange is one transition of a Limiter's circuit breaker, as passed to the hooks of
// WithStateHook (and so to the ObserveBreaker methods of this module's observers). The
// transitions are Closed → Open (the primary failed
// WithFailureThreshold times in a row), Open → HalfOpen (the cooldown ended and a probe
// goes to the primary), HalfOpen → Closed (the probe succeeded) and HalfOpen → Open (it
// failed).
type StateChange struct {
	// From is the state the breaker left.
	From State
	// To is the state the breaker entered.
	To State
	// Err is the failure that opened the breaker, for a change to Open; nil otherwise.
	Err error
}

// Degraded reports whether decisions no longer come from the primary after the change
// (all of them but the probe's): the breaker is open or half-open.
func (c StateChange) Degraded() bool { return c.To != Closed }

// Recovered reports whether the change closed the breaker: the primary decides again.
func (c StateChange) Recovered() bool { return c.To == Closed }

// Edge reports whether the change begins an outage (Closed → Open: degraded) or ends it
// (HalfOpen → Closed: recovered). The changes between them, Open → HalfOpen and back for
// each probe while the primary stays down (one pair per cooldown, four a second by
// default), are not edges: a hook that logs only edges logs an outage twice, however long.
func (c StateChange) Edge() bool { return c.From == Closed || c.To == Closed }

// String describes the change for people, as in
// "circuit breaker closed → open (degraded): distributed: context deadline exceeded".
func (c StateChange) String() string {
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

// LogValue makes a StateChange log as a group with the fields from, to, degraded and, when
// set, err, so that slog.Any("breaker", change) gives
// breaker.from=closed breaker.to=open breaker.degraded=true breaker.err="…".
func (c StateChange) LogValue() slog.Value {
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

// setBreaker sets b's threshold and cooldown, and its hook to tell hook, if any, of each
// change as a StateChange. b is the shared breaker of package internal/breaker.
func setBreaker(b *breaker.Breaker, threshold int32, cooldown int64, hook func(StateChange)) {
	b.Threshold, b.Cooldown = threshold, cooldown
	if hook != nil {
		b.Hook = func(from, to breaker.State, err error) {
			hook(StateChange{From: State(from), To: State(to), Err: err})
		}
	}
}
