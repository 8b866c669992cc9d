package local

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

var _ ratelimit.Limiter = (*Limiter)(nil)

// Limiter is an in-process ratelimit.Limiter: one golang.org/x/time/rate limiter per bucket,
// kept in memory. It is safe for concurrent use. Create it with New and stop it with Close.
type Limiter struct {
	store     *store
	algorithm ratelimit.Algorithm
	clock     func() time.Time // nil: the monotonic clock, read from epoch
	epoch     time.Time
	idle      time.Duration

	closed    atomic.Bool
	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// New returns a Limiter configured by opts and starts its cleanup goroutine (unless
// WithCleanupInterval turned it off). Call Close to stop it.
func New(opts ...Option) *Limiter {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	l := &Limiter{
		store:     newStore(o.maxBuckets, stateFor(o.algorithm)),
		algorithm: o.algorithm,
		clock:     o.clock,
		epoch:     time.Now(),
		idle:      o.idleTimeout,
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	if o.cleanupInterval > 0 {
		go l.cleanup(o.cleanupInterval)
	} else {
		close(l.done)
	}
	return l
}

// Allow is AllowN with n = 1.
func (l *Limiter) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return l.AllowN(ctx, key, limit, 1)
}

// AllowN takes n tokens from the bucket of (key, limit) if it holds at least n, and denies
// the request otherwise; see ratelimit.Limiter. It never blocks on anything but a short lock,
// and it does not look at ctx.
func (l *Limiter) AllowN(_ context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	if err := l.check(key, limit, n); err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	return l.store.decide(key, limit.Rate, limit.Burst, l.now(), n, unbounded), nil
}

// Wait blocks until one token of the bucket of (key, limit) can be taken, and takes it. It
// returns ctx's error as soon as ctx ends, and fails at once, with an error wrapping
// context.DeadlineExceeded, when ctx's deadline comes before the token would. A Wait that
// returns an error has taken nothing.
//
// Waiters are not queued: when a token comes back, whichever caller asks first gets it.
//
// With ratelimit.LeakyBucket, Wait joins the queue instead: it takes a place whose Delay
// ends by ctx's deadline (failing at once, having taken nothing, when none would), waits
// for a place when the queue is full, then sleeps the Delay. If ctx ends during that sleep,
// Wait returns ctx's error and the place stays taken: the request it held has gone by.
func (l *Limiter) Wait(ctx context.Context, key string, limit ratelimit.Limit) error {
	if l.algorithm == ratelimit.LeakyBucket {
		return l.waitInQueue(ctx, key, limit)
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, err := l.AllowN(ctx, key, limit, 1)
		if err != nil {
			return err
		}
		if res.Allowed {
			return nil
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < res.RetryAfter {
			return fmt.Errorf("ratelimit: waiting %v would pass the context deadline: %w",
				res.RetryAfter, context.DeadlineExceeded)
		}
		timer := time.NewTimer(res.RetryAfter)
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-l.stop:
			timer.Stop()
			return ratelimit.ErrClosed
		case <-timer.C:
		}
	}
}

// Close stops the cleanup goroutine and waits for it to return. Calls made after Close,
// and Waits still blocked in it, return ratelimit.ErrClosed. Close always returns nil.
func (l *Limiter) Close() error {
	l.closeOnce.Do(func() {
		l.closed.Store(true)
		close(l.stop)
		<-l.done
	})
	return nil
}

// Len returns the number of buckets the limiter holds, not counting the overflow buckets
// shared by keys that arrived at the cap (see WithMaxBuckets).
func (l *Limiter) Len() int { return l.store.len() }

// check validates one call's arguments, in the order the errors are documented.
func (l *Limiter) check(key string, limit ratelimit.Limit, n int) error {
	if l.closed.Load() {
		return ratelimit.ErrClosed
	}
	if l.store.newState == nil {
		return fmt.Errorf("%w: algorithm %v on the local backend", ratelimit.ErrNotSupported, l.algorithm)
	}
	if err := args.Check(key, limit, n); err != nil {
		return err
	}
	return args.CheckAlgorithm(l.algorithm, limit)
}

// stateFor returns the constructor of the algorithm's bucket state, or nil if this backend
// does not implement the algorithm.
func stateFor(a ratelimit.Algorithm) newStateFunc {
	switch a {
	case ratelimit.TokenBucket:
		return newTokenBucket
	case ratelimit.FixedWindow:
		return newFixedWindow
	case ratelimit.SlidingWindowLog:
		return newSlidingLog
	case ratelimit.SlidingWindowCounter:
		return newSlidingCounter
	case ratelimit.LeakyBucket:
		return newLeakyBucket
	}
	return nil
}

// now reads the injected clock, or else the monotonic clock: time.Since on a time that
// carries a monotonic reading costs about half of time.Now.
func (l *Limiter) now() time.Time {
	if l.clock != nil {
		return l.clock()
	}
	return l.epoch.Add(time.Since(l.epoch))
}

func (l *Limiter) cleanup(every time.Duration) {
	defer close(l.done)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-ticker.C:
			l.store.sweep(l.now().Add(-l.idle))
		}
	}
}
