package lease

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/observe"
)

// Limiter is a ratelimit.Limiter that decides the keys WithHot marks from chunks of tokens
// taken from their Redis buckets ahead of use, and every other key on its backend. It is
// safe for concurrent use. Build one per process: its instance id names it in Redis.
type Limiter struct {
	backend   *distributed.Limiter
	hot       func(key string, limit ratelimit.Limit) bool
	target    time.Duration
	instances int
	shards    int
	leaseTime time.Duration
	observer  observe.Observer
	policy    string
	id        string
	start     time.Time // the zero of now
	keys      atomic.Pointer[map[keyID]*entry]
	mu        sync.Mutex     // serializes changes of keys
	flights   sync.WaitGroup // the grants asked for in the background
	closed    atomic.Bool
	stop      chan struct{} // closed by Close, to end the janitor
	done      chan struct{} // closed by the janitor when it ends
}

var _ ratelimit.Limiter = (*Limiter)(nil)

// keyID is a leased bucket's identity: the key and the limit, as on every backend.
type keyID struct {
	key   string
	limit ratelimit.Limit
}

// New returns a Limiter over backend. It starts one goroutine, which gives back the tokens
// of keys gone cold and renews the records of the held ones; Close stops it. New panics on
// a nil backend and on options that conflict (WithLeaseTime not longer than WithTarget).
// backend, with WithClientClock, must be on the same clock as this process.
func New(backend *distributed.Limiter, opts ...Option) *Limiter {
	if backend == nil {
		panic("lease: New: nil backend")
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	o.check()
	var id [8]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	l := &Limiter{
		backend: backend, hot: o.hot, target: o.target, instances: o.instances, shards: o.shards,
		leaseTime: o.leaseTime, observer: o.observer, policy: o.policy, id: hex.EncodeToString(id[:]),
		start: time.Now(), stop: make(chan struct{}), done: make(chan struct{}),
	}
	m := map[keyID]*entry{}
	l.keys.Store(&m)
	go l.janitor()
	return l
}

// now returns the monotonic clock in nanoseconds since New.
func (l *Limiter) now() int64 { return int64(time.Since(l.start)) }

// Allow is AllowN with n = 1.
func (l *Limiter) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return l.AllowN(ctx, key, limit, 1)
}

// AllowN decides a request for n tokens. A key WithHot does not mark, or whose limit cannot
// be leased (an algorithm other than the token bucket, a warm-up, KeepUsage), is decided by
// the backend. A leased key is decided from this instance's allowance, with no round trip
// when it holds n tokens; otherwise AllowN waits for a chunk (at most one call in flight
// per key and process), unless a refused chunk's RetryAfter has not passed, in which case
// it denies at once. The Result's Remaining is this instance's allowance after the
// decision, not the bucket's; a denial's RetryAfter is the refused chunk's (when this
// instance's share of the refill covers a chunk) or the time the missing tokens take at
// Rate; ResetAfter is the bucket's at the last grant. When Redis fails and the allowance
// cannot cover n, AllowN returns the backend's error, so that a fallback.Limiter around
// the Limiter applies its rules.
//
// Priorities (priority.Reserves) are not applied to leased keys: a chunk is spent by
// every priority alike.
func (l *Limiter) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	if l.closed.Load() {
		return ratelimit.Result{Limit: limit}, ratelimit.ErrClosed
	}
	if l.hot == nil || !leasable(limit) || !l.hot(key, limit) {
		return l.backend.AllowN(ctx, key, limit, n)
	}
	if err := args.Check(key, limit, n); err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	for {
		e, err := l.entry(key, limit)
		if err != nil {
			return ratelimit.Result{Limit: limit}, err
		}
		res, err := e.allowN(ctx, n)
		if err != errGone {
			return res, err
		}
	}
}

// leasable reports whether limit is a plain token bucket's, the only one leased.
func leasable(limit ratelimit.Limit) bool {
	return (limit.Algorithm == ratelimit.DefaultAlgorithm || limit.Algorithm == ratelimit.TokenBucket) &&
		limit.Warmup == 0 && !limit.KeepUsage
}

// Wait returns ratelimit.ErrNotSupported for a leased key, and is the backend's Wait for
// the others.
func (l *Limiter) Wait(ctx context.Context, key string, limit ratelimit.Limit) error {
	if l.closed.Load() {
		return ratelimit.ErrClosed
	}
	if l.hot != nil && leasable(limit) && l.hot(key, limit) {
		return ratelimit.ErrNotSupported
	}
	return l.backend.Wait(ctx, key, limit)
}

// Close gives back to Redis the tokens this instance holds, removes its records, stops its
// goroutine and makes every later call return ratelimit.ErrClosed. It waits for the grants
// in flight, and for the calls that give tokens back, each within the backend's deadline;
// tokens it could not give back return when their lease ends. It does not close the
// backend, which belongs to the caller. A second Close returns nil.
func (l *Limiter) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(l.stop)
	<-l.done
	l.flights.Wait()
	for _, e := range *l.keys.Load() {
		e.release()
	}
	return nil
}

// entry returns the state of (key, limit), made on first use.
func (l *Limiter) entry(key string, limit ratelimit.Limit) (*entry, error) {
	id := keyID{key, limit}
	if e, ok := (*l.keys.Load())[id]; ok {
		return e, nil
	}
	if err := l.backend.ValidateLimit(limit); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	m := *l.keys.Load()
	if e, ok := m[id]; ok {
		return e, nil
	}
	e := newEntry(l, key, limit)
	next := maps.Clone(m)
	next[id] = e
	l.keys.Store(&next)
	return e, nil
}

// drop removes e from the keys.
func (l *Limiter) drop(e *entry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := *l.keys.Load()
	next := maps.Clone(m)
	delete(next, keyID{e.key, e.limit})
	l.keys.Store(&next)
}

// janitor runs sweep every eighth of the lease time, until Close.
func (l *Limiter) janitor() {
	defer close(l.done)
	t := time.NewTicker(l.leaseTime / 8)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.sweep()
		}
	}
}

// sweep gives back the tokens of the keys unused for half the lease time and forgets them,
// and renews the records of the others that have not been renewed for as long.
func (l *Limiter) sweep() {
	now := l.now()
	for _, e := range *l.keys.Load() {
		if now-e.used.Load() > int64(l.leaseTime/2) {
			if e.release() {
				l.drop(e)
			}
			continue
		}
		e.renew(now)
	}
}
