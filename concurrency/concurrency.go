package concurrency

import (
	"context"
	"errors"
)

// Limiter admits at most max holders of a key at once. Implementations are safe for
// concurrent use.
//
// A key's identity is the key alone: calls that name the same key with different max values
// share its holders, and each call is admitted against its own max.
type Limiter interface {
	// Acquire returns a permit for key, waiting for one as the limiter's queue allows. It
	// returns an error wrapping ctx.Err() when ctx ends first (also when ctx has ended
	// before the call), and an error wrapping ErrQueueFull, at once, when no permit is free
	// and the queue has no room, or when a newer waiter takes this one's place in it.
	Acquire(ctx context.Context, key string, max int) (Permit, error)
	// TryAcquire returns a permit for key if one is free now, and never waits: ok is false,
	// with a nil error, when none is. An error means the limiter could not decide.
	TryAcquire(ctx context.Context, key string, max int) (p Permit, ok bool, err error)
	// Close releases the limiter's resources and fails the callers still waiting with
	// ratelimit.ErrClosed. Every Acquire or TryAcquire after Close returns
	// ratelimit.ErrClosed; permits still held may be released after it. A second Close
	// returns nil.
	Close() error
}

// ErrQueueFull is wrapped by the error Acquire returns when no permit is free and the
// caller cannot wait for one: the queue is full, or a newer caller took its place. It is a
// refusal for lack of capacity, like a denied rate limit, not a failure of the limiter.
var ErrQueueFull = errors.New("concurrency: queue full")

// Outcome is what a permit's holder reports of the work it did, for an adaptive limit.
// Limits that do not adapt ignore it.
type Outcome int

const (
	// Succeeded: the work completed; the time the permit was held is a latency sample.
	Succeeded Outcome = iota
	// Dropped: the work failed for lack of capacity (it timed out, was shed, or the
	// protected service answered that it is overloaded). An adaptive limit decreases.
	Dropped
	// Ignored: the outcome says nothing of the protected service's capacity (the client
	// went away, the request was invalid). An adaptive limit takes no sample.
	Ignored
)

// Permit is one admission, returned by Acquire and TryAcquire. It is a small value: copy it
// freely. The first Release or ReleaseWith among all copies frees the permit; every later
// call does nothing. Both are safe from any goroutine. The zero Permit holds nothing, and
// releasing it does nothing, so
//
//	p, err := l.Acquire(ctx, key, 10)
//	defer p.Release()
//
// is safe whatever err is.
type Permit struct {
	r   Releaser
	gen uint64
}

// Releaser frees the permits of a backend. A backend names each permit it grants with a
// value gen (NewPermit) and must free it on the first ReleasePermit(gen, …) only, ignoring
// every later call with the same gen. Implementations outside this package let a Limiter
// of your own hand out Permits.
type Releaser interface {
	ReleasePermit(gen uint64, o Outcome)
}

// NewPermit returns the permit gen of r: releasing it calls r.ReleasePermit(gen, outcome).
func NewPermit(r Releaser, gen uint64) Permit { return Permit{r: r, gen: gen} }

// Release frees the permit, reporting Succeeded: it is ReleaseWith(Succeeded).
func (p Permit) Release() { p.ReleaseWith(Succeeded) }

// ReleaseWith frees the permit and reports o to an adaptive limit.
func (p Permit) ReleaseWith(o Outcome) {
	if p.r != nil {
		p.r.ReleasePermit(p.gen, o)
	}
}

// Held reports whether p was granted, that is, whether it is not the zero Permit. It stays
// true after Release.
func (p Permit) Held() bool { return p.r != nil }
