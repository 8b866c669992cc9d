package local

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/priority"
)

var _ ratelimit.Limiter = (*Limiter)(nil)

// Limiter is an in-process ratelimit.Limiter: one bucket per (key, limit), kept in memory,
// the limit's algorithm among its identity (see ratelimit.Limit.Algorithm). It is safe for
// concurrent use. Create it with New and stop it with Close.
type Limiter struct {
	store *store
	// algorithm is the default, for the limits that name none (WithAlgorithm).
	algorithm ratelimit.Algorithm
	supported bool             // this backend implements algorithm
	clock     func() time.Time // tests only (export_test.go); nil: the monotonic clock
	epoch     time.Time        // when New ran, with its monotonic reading
	epochNS   int64            // epoch in Unix nanoseconds
	idle      int64            // WithIdleTimeout, µs
	reserves  priority.Reserves

	closed    atomic.Bool
	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

// New returns a Limiter configured by opts and starts its cleanup goroutine (unless
// WithCleanupInterval turned it off). Call Close to stop it. It panics on reserves that
// cannot be enforced (WithReserves), and on an algorithm that is none of the ratelimit
// package's (WithAlgorithm).
func New(opts ...Option) *Limiter {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := o.reserves.Validate(); err != nil {
		panic("local: New: WithReserves: " + err.Error())
	}
	if err := args.CheckDefault(o.algorithm); err != nil {
		panic("local: New: " + err.Error())
	}
	epoch := time.Now()
	l := &Limiter{
		store:     newStore(o.maxBuckets),
		algorithm: o.algorithm,
		supported: o.algorithm >= ratelimit.TokenBucket && o.algorithm <= ratelimit.LeakyBucket,
		clock:     o.clock,
		epoch:     epoch,
		epochNS:   epoch.UnixNano(),
		idle:      o.idleTimeout.Microseconds(),
		reserves:  o.reserves,
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
// the request otherwise; see ratelimit.Limiter. A request whose ctx carries a priority below
// priority.Critical must leave its reserve in the bucket (WithReserves). It reads nothing
// else from ctx, and it blocks on a lock only to create a bucket, or for the algorithms that
// keep more than 64 bits of state.
func (l *Limiter) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	var w int64 // the window of a window algorithm, µs
	var named ratelimit.Limit
	// A token bucket's valid arguments need no more checks than these, so that the
	// commonest decisions skip validate; a plain one (without KeepUsage) copies no Limit
	// either (see store.decidePlain).
	fast := (limit.Algorithm == ratelimit.TokenBucket || limit.Algorithm == ratelimit.DefaultAlgorithm && l.algorithm == ratelimit.TokenBucket) &&
		args.Valid(key, limit, n) && args.RefillOK(limit) && resolutionOK(limit) && limit.Warmup == 0 &&
		(!limit.KeepUsage || limit.Rate <= args.MaxKeepRate) && !l.closed.Load()
	plain := fast && !limit.KeepUsage
	switch {
	case !fast:
		var err error
		if named, w, err = l.validate(key, limit, n); err != nil {
			return ratelimit.Result{Limit: limit}, err
		}
	case !plain:
		named = limit
		named.Algorithm = ratelimit.TokenBucket
	}
	var reserve int
	if p := priority.From(ctx); p != priority.Critical { // l.reserve, inlined
		var err error
		if reserve, err = args.Reserve(l.reserves, p, limit, n); err != nil {
			return ratelimit.Result{Limit: limit}, err
		}
	}
	var u int64
	if l.clock == nil {
		u = (l.epochNS + int64(time.Since(l.epoch))) / 1e3 // micros, without the call
	} else {
		u = l.clockMicros()
	}
	var v verdict
	var delay time.Duration
	if plain {
		v = l.store.decidePlain(key, limit.Rate, limit.Burst, u, n, reserve)
	} else {
		v, delay = l.store.decideAt(key, named, u, w, n, reserve, unbounded)
	}
	// Built here, field by field, rather than by v.result: a Result made in a callee and
	// returned from here would be copied once more.
	res := ratelimit.Result{
		Allowed:    v.allowed,
		Limit:      limit,
		Remaining:  v.remaining,
		RetryAfter: v.retry,
		ResetAfter: v.reset,
		Delay:      delay,
	}
	if v.allowed {
		res.Charge.At = chargeAt(u)
	}
	return res, nil
}

// Wait blocks until one token of the bucket of (key, limit) can be taken, and takes it. It
// returns ctx's error as soon as ctx ends, and fails at once, with an error wrapping
// context.DeadlineExceeded, when ctx's deadline comes before the token would. A Wait that
// returns an error has taken nothing.
//
// Waiters are not queued: when a token comes back, whichever caller asks first gets it.
//
// With ratelimit.LeakyBucket (the limit's algorithm, or the limiter's default for a limit
// that names none), Wait joins the queue instead: it takes a place whose Delay
// ends by ctx's deadline (failing at once, having taken nothing, when none would), waits
// for a place when the queue is full, then sleeps the Delay. If ctx ends during that sleep,
// Wait returns ctx's error and the place stays taken: the request it held has gone by.
func (l *Limiter) Wait(ctx context.Context, key string, limit ratelimit.Limit) error {
	if args.Resolve(limit, l.algorithm).Algorithm == ratelimit.LeakyBucket {
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

// validate checks one call's arguments, in the order the errors are documented, and
// returns the limit with its algorithm named (args.Resolve) and the window W of a window
// algorithm in µs (0 for the others), which its validation computes.
func (l *Limiter) validate(key string, limit ratelimit.Limit, n int) (ratelimit.Limit, int64, error) {
	named := args.Resolve(limit, l.algorithm)
	if !args.Valid(key, limit, n) || (limit.Algorithm == ratelimit.DefaultAlgorithm && !l.supported) || l.closed.Load() {
		// Valid is false for every quota, which only invalid can clear.
		if err := l.invalid(key, limit, n); err != nil || limit.Algorithm != ratelimit.CalendarQuota {
			return named, 0, err
		}
	}
	// args.CheckAlgorithm, keeping the window it computes.
	if named.Warmup != 0 {
		if err := args.CheckWarmup(named.Algorithm, named); err != nil {
			return named, 0, err
		}
	}
	if err := args.CheckKeep(named.Algorithm, named); err != nil {
		return named, 0, err
	}
	var w int64
	var err error
	switch named.Algorithm {
	case ratelimit.FixedWindow, ratelimit.SlidingWindowCounter:
		w, err = args.Window(named)
	case ratelimit.SlidingWindowLog:
		w, err = args.LogWindow(named)
	case ratelimit.CalendarQuota:
		_, _, err = l.store.zones.Load(named.Period.Zone)
	default:
		err = checkAlgorithm(named)
	}
	return named, w, err
}

// reserve returns the tokens a request for n under limit must leave in its bucket at the
// priority ctx carries (see args.Reserve).
func (l *Limiter) reserve(ctx context.Context, limit ratelimit.Limit, n int) (int, error) {
	if p := priority.From(ctx); p != priority.Critical {
		return args.Reserve(l.reserves, p, limit, n)
	}
	return 0, nil
}

// invalid returns what is wrong with a call, in the order the errors are documented, or nil.
func (l *Limiter) invalid(key string, limit ratelimit.Limit, n int) error {
	if l.closed.Load() {
		return ratelimit.ErrClosed
	}
	if limit.Algorithm == ratelimit.DefaultAlgorithm && !l.supported {
		return fmt.Errorf("%w: algorithm %v on the local backend", ratelimit.ErrNotSupported, l.algorithm)
	}
	return args.Check(key, limit, n)
}

// windowFor returns the window W of a window algorithm's valid limit in µs, and 0 for the
// other algorithms.
func windowFor(a ratelimit.Algorithm, r float64, burst int) int64 {
	switch a {
	case ratelimit.FixedWindow, ratelimit.SlidingWindowCounter, ratelimit.SlidingWindowLog:
		w, _ := args.Window(ratelimit.Limit{Rate: r, Burst: burst})
		return w
	}
	return 0
}

// micros reads the clock as whole Unix microseconds. The system clock is read as the
// monotonic time since New, added to the wall time New read: one clock reading and integer
// arithmetic, with the wall clock's steps kept out. testing/synctest's fake clock drives it
// like the real one.
func (l *Limiter) micros() int64 {
	if l.clock != nil {
		return l.clockMicros()
	}
	return (l.epochNS + int64(time.Since(l.epoch))) / 1e3
}

func (l *Limiter) clockMicros() int64 { return l.clock().UnixMicro() }

// chargeAt is the Charge.At of a decision made at u (Unix µs): in UTC, as the Redis backend
// reports its own.
func chargeAt(u int64) time.Time { return time.UnixMicro(u).UTC() }

// now is micros as a time.Time, for the leaky bucket's Wait.
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
			l.store.sweep(l.micros() - l.idle)
		}
	}
}

// Len returns the number of buckets the limiter holds, not counting the overflow buckets
// shared by keys that arrived at the cap (see WithMaxBuckets): the ratelimit.buckets gauge
// of otelmetrics and prommetrics (WithBuckets("local", l.Len)).
func (l *Limiter) Len() int { return l.store.len() }
