// Package breaker is the circuit breaker of the fallback limiters, for rates (package
// fallback) and for concurrency (package concurrency/fallback): the mechanics once, each
// package naming its states and reporting its changes in its own types.
package breaker

import "sync/atomic"

// State is a breaker's state; both fallbacks export it as their State.
type State uint8

const (
	// Closed: every call goes to the primary. The zero State.
	Closed State = iota
	// Open: the primary is not called until the cooldown ends.
	Open
	// HalfOpen: one call, the probe, goes to the primary.
	HalfOpen
)

// The breaker's state and the time that goes with it share one word, so that a transition
// is a single compare-and-swap and the hot path a single load: the state in the top two
// bits, and in the other 62 a time in nanoseconds since the user's epoch (146 years):
//
//	Closed:   0
//	Open:     when the cooldown ends
//	HalfOpen: when another call may take over the probe, should it never come back
const (
	stateShift = 62
	timeMask   = 1<<stateShift - 1
)

// Ticket says which path a call took through the breaker: 0 for a call made while closed,
// or the HalfOpen word its probe installed, which only that probe can replace.
type Ticket uint64

// Breaker is a lock-free circuit breaker. Times are nanoseconds since an epoch of the
// user's choosing, never negative. The zero Threshold turns it off: every call then goes to
// the primary. Set the fields before the first call; they are read-only after.
type Breaker struct {
	// Threshold is how many failures in a row open a closed breaker; 0: never.
	Threshold int32
	// Cooldown is how long, in nanoseconds, the breaker stays open before a probe.
	Cooldown int64
	// Hook, when not nil, is told of every change, on the goroutine that made it, after it.
	Hook func(Change)

	word     atomic.Uint64
	failures atomic.Int32 // consecutive failures while closed
}

func word(s State, t int64) uint64 { return uint64(s)<<stateShift | uint64(t)&timeMask }

// State returns the breaker's state.
func (b *Breaker) State() State { return State(b.word.Load() >> stateShift) }

// Admit reports whether a call at now may go to the primary, and with which ticket. While
// the breaker is open, the first call after the cooldown becomes the probe.
func (b *Breaker) Admit(now int64) (bool, Ticket) {
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
				b.notify(Open, HalfOpen, nil)
			}
			return true, Ticket(probe)
		}
	}
}

// Success records that the primary decided. A probe's success closes the breaker.
func (b *Breaker) Success(t Ticket) {
	if t == 0 {
		if b.failures.Load() != 0 { // a load first: no write to a shared line on every call
			b.failures.Store(0)
		}
		return
	}
	if b.word.CompareAndSwap(uint64(t), 0) {
		b.failures.Store(0)
		b.notify(HalfOpen, Closed, nil)
	}
}

// Failure records that the primary could not decide. The Threshold-th failure in a row
// opens a closed breaker; a probe's failure reopens it.
func (b *Breaker) Failure(t Ticket, now int64, err error) {
	open := word(Open, b.after(now))
	if t != 0 {
		if b.word.CompareAndSwap(uint64(t), open) {
			b.notify(HalfOpen, Open, err)
		}
		return
	}
	if b.Threshold == 0 || b.failures.Add(1) < b.Threshold {
		return
	}
	if b.word.CompareAndSwap(0, open) {
		b.failures.Store(0)
		b.notify(Closed, Open, err)
	}
}

// Inconclusive records that the primary's answer said nothing about its health (a caller
// that went away, an argument only the primary rejects). A probe that got such an answer
// hands the probe on to the next call.
func (b *Breaker) Inconclusive(t Ticket, now int64) {
	if t != 0 {
		b.word.CompareAndSwap(uint64(t), word(HalfOpen, now))
	}
}

// after returns when a cooldown that starts at now ends, at most the largest time a word
// holds, so that no cooldown, however long, wraps around to the past.
func (b *Breaker) after(now int64) int64 {
	if b.Cooldown > timeMask-now {
		return timeMask
	}
	return now + b.Cooldown
}

func (b *Breaker) notify(from, to State, err error) {
	if b.Hook != nil {
		b.Hook(Change{From: from, To: to, Err: err})
	}
}
