package fallback

import (
	"log/slog"
	"strconv"
	"sync/atomic"
)

// State is the state of a Limiter's circuit breaker.
type State uint8

const (
	// Closed is the normal state, and the zero State: every call goes to the primary.
	Closed State = iota
	// Open means the primary failed too often: it is not called until the cooldown ends,
	// and every decision comes from the secondary (or fails with ErrUnavailable).
	Open
	// HalfOpen means the cooldown has ended: one call, the probe, goes to the primary, and
	// the others to the secondary until the probe's answer closes or reopens the breaker.
	HalfOpen
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

// The breaker's state and the time that goes with it share one word, so that a transition
// is a single compare-and-swap and the hot path a single load: the state in the top two
// bits, and in the other 62 a time in nanoseconds since the Limiter's epoch (146 years):
//
//	Closed:   0
//	Open:     when the cooldown ends
//	HalfOpen: when another call may take over the probe, should it never come back
const (
	stateShift = 62
	timeMask   = 1<<stateShift - 1
)

// ticket says which path a call took through the breaker: 0 for a call made while closed,
// or the HalfOpen word its probe installed, which only that probe can replace.
type ticket uint64

// breaker is a lock-free circuit breaker. The zero threshold turns it off: every call then
// goes to the primary.
type breaker struct {
	word      atomic.Uint64
	failures  atomic.Int32 // consecutive failures while closed
	threshold int32
	cooldown  int64 // nanoseconds
	hook      func(StateChange)
}

func word(s State, t int64) uint64 { return uint64(s)<<stateShift | uint64(t)&timeMask }

func (b *breaker) state() State { return State(b.word.Load() >> stateShift) }

// admit reports whether a call at now may go to the primary, and with which ticket. While
// the breaker is open, the first call after the cooldown becomes the probe.
func (b *breaker) admit(now int64) (bool, ticket) {
	for {
		w := b.word.Load()
		from := State(w >> stateShift)
		if from == Closed {
			return true, 0
		}
		if now < int64(w&timeMask) {
			return false, 0
		}
		probe := word(HalfOpen, b.after(now))
		if b.word.CompareAndSwap(w, probe) {
			if from == Open {
				b.notify(StateChange{From: Open, To: HalfOpen})
			}
			return true, ticket(probe)
		}
	}
}

// success records that the primary decided. A probe's success closes the breaker.
func (b *breaker) success(t ticket) {
	if t == 0 {
		if b.failures.Load() != 0 { // a load first: no write to a shared line on every call
			b.failures.Store(0)
		}
		return
	}
	if b.word.CompareAndSwap(uint64(t), 0) {
		b.failures.Store(0)
		b.notify(StateChange{From: HalfOpen, To: Closed})
	}
}

// failure records that the primary could not decide. The threshold-th failure in a row
// opens a closed breaker; a probe's failure reopens it.
func (b *breaker) failure(t ticket, now int64, err error) {
	open := word(Open, b.after(now))
	if t != 0 {
		if b.word.CompareAndSwap(uint64(t), open) {
			b.notify(StateChange{From: HalfOpen, To: Open, Err: err})
		}
		return
	}
	if b.threshold == 0 || b.failures.Add(1) < b.threshold {
		return
	}
	if b.word.CompareAndSwap(0, open) {
		b.failures.Store(0)
		b.notify(StateChange{From: Closed, To: Open, Err: err})
	}
}

// inconclusive records that the primary's answer said nothing about its health (a caller
// that went away, an argument only the primary rejects). A probe that got such an answer
// hands the probe on to the next call.
func (b *breaker) inconclusive(t ticket, now int64) {
	if t != 0 {
		b.word.CompareAndSwap(uint64(t), word(HalfOpen, now))
	}
}

// after returns when a cooldown that starts at now ends, at most the largest time a word
// holds, so that no cooldown, however long, wraps around to the past.
func (b *breaker) after(now int64) int64 {
	if b.cooldown > timeMask-now {
		return timeMask
	}
	return now + b.cooldown
}

func (b *breaker) notify(c StateChange) {
	if b.hook != nil {
		b.hook(c)
	}
}
