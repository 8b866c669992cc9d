package local

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/internal/args"
)

// Keys are split into shards so that callers of different keys rarely meet on a lock. A
// power of two, so the low bits of a hash pick a shard.
const (
	shardBits = 6
	numShards = 1 << shardBits
	// evictSample is how many keys a full shard looks at for an idle one to replace.
	evictSample = 8
)

// Limiter is a concurrency.Limiter whose permits are counted in this process. It is safe
// for concurrent use. Build it with New.
type Limiter struct {
	queue    int // waiters per key; 0: no queue
	order    Order
	perShard int
	aimd     *concurrency.AIMD // nil: the limit is each call's max
	clock    func() time.Time
	start    time.Time // the monotonic origin of now, without a clock
	seed     maphash.Seed
	holders  sync.Pool // of *holder
	closed   atomic.Bool
	shards   [numShards]shard
}

var (
	_ concurrency.Limiter       = (*Limiter)(nil)
	_ concurrency.StatsReporter = (*Limiter)(nil)
)

// shard is one part of the keys; mu guards every entry in it, their queues and holders'
// counts. The padding keeps two shards' mutexes off one cache line.
type shard struct {
	mu       sync.Mutex
	keys     map[string]*entry
	overflow *entry // shared by the new keys that find the shard full: see WithMaxKeys
	_        [128 - 24]byte
}

// entry is one key's state.
type entry struct {
	held    int // permits granted and not released
	waiters waitList
	max     int // the max of the key's last Acquire or TryAcquire, for Limit
	adapt   concurrency.AIMDState
}

// idle reports whether the entry carries no state worth keeping: no holder, no waiter. Its
// adaptive limit is lost when it is dropped.
func (e *entry) idle() bool { return e.held == 0 && e.waiters.Len() == 0 }

// New returns a Limiter configured by opts. It starts no goroutine. It panics when
// WithAdaptive is given an AIMD that concurrency.AIMD.Validate refuses.
func New(opts ...Option) *Limiter {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	l := &Limiter{
		queue:    o.queue,
		order:    o.order,
		perShard: max(o.maxKeys/numShards, 1),
		clock:    o.clock,
		start:    time.Now(),
		seed:     maphash.MakeSeed(),
	}
	if o.adaptive != nil {
		if err := o.adaptive.Validate(); err != nil {
			panic(fmt.Sprintf("local: New: WithAdaptive: %v", err))
		}
		l.aimd = o.adaptive
	}
	l.holders.New = func() any { return &holder{l: l} }
	for i := range l.shards {
		l.shards[i].keys = make(map[string]*entry)
		l.shards[i].overflow = &entry{}
	}
	return l
}

// Acquire returns a permit for key once fewer than max are held, as Limiter.Acquire says:
// at once when one is free and nobody waits, otherwise after waiting in the key's queue
// (WithQueue). It blocks no goroutine but the caller's. With WithAdaptive, max is the
// most the key's limit may rise to, and the limit in force is the adaptive one (Limit).
// The errors wrap ratelimit.ErrInvalidArgument (an empty or too long key, max < 1),
// ratelimit.ErrClosed, concurrency.ErrQueueFull or ctx.Err().
func (l *Limiter) Acquire(ctx context.Context, key string, max int) (concurrency.Permit, error) {
	if err := l.check(ctx, key, max); err != nil {
		return concurrency.Permit{}, err
	}
	sh, e := l.lock(key, max)
	if p, ok := l.tryLocked(sh, e, max); ok {
		sh.mu.Unlock()
		return p, nil
	}
	if l.closed.Load() {
		// Close has failed this shard's waiters already, or will once it holds the lock.
		sh.mu.Unlock()
		return concurrency.Permit{}, errClosed
	}
	if e.waiters.Len() >= l.queue {
		if l.order == OldestFirst || l.queue == 0 {
			sh.mu.Unlock()
			return concurrency.Permit{}, errFull
		}
		e.waiters.PopFront().finish(concurrency.Permit{}, errFull)
	}
	w := &waiter{max: max, ready: make(chan struct{})}
	e.waiters.PushBack(w)
	sh.mu.Unlock()

	select {
	case <-w.ready:
		return w.permit, w.err
	case <-ctx.Done():
	}
	sh.mu.Lock()
	if w.done {
		// Granted (or refused) while ctx ended: the caller is gone either way, so the
		// permit goes to the next waiter.
		sh.mu.Unlock()
		w.permit.ReleaseWith(concurrency.Ignored)
	} else {
		e.waiters.Remove(w)
		sh.mu.Unlock()
	}
	return concurrency.Permit{}, fmt.Errorf("local: waiting for a permit: %w", ctx.Err())
}

// errFull is returned as is: a refusal needs no allocation.
var errFull = fmt.Errorf("%w: no permit free and no room to wait", concurrency.ErrQueueFull)

// TryAcquire returns a permit for key if fewer than max are held and nobody waits for one,
// and never waits. It fails as Acquire does, concurrency.ErrQueueFull apart: ok = false
// says that no permit is free.
func (l *Limiter) TryAcquire(ctx context.Context, key string, max int) (concurrency.Permit, bool, error) {
	if err := l.check(ctx, key, max); err != nil {
		return concurrency.Permit{}, false, err
	}
	sh, e := l.lock(key, max)
	p, ok := l.tryLocked(sh, e, max)
	sh.mu.Unlock()
	return p, ok, nil
}

// Limit returns the limit in force for key: the max of its last call or, with
// WithAdaptive, its adaptive limit under that max. ok is false when the limiter does not
// track key (it was never used, or it was dropped while idle).
func (l *Limiter) Limit(key string) (limit int, ok bool) {
	sh := l.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.keys[key]
	if e == nil {
		return 0, false
	}
	return l.limitOf(e, e.max), true
}

// Close fails every waiting caller with ratelimit.ErrClosed, and every later Acquire and
// TryAcquire. Permits still held may be released after Close. A second Close returns nil.
func (l *Limiter) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, e := range sh.keys {
			for e.waiters.Len() > 0 {
				e.waiters.PopFront().finish(concurrency.Permit{}, errClosed)
			}
		}
		for e := sh.overflow; e.waiters.Len() > 0; {
			e.waiters.PopFront().finish(concurrency.Permit{}, errClosed)
		}
		sh.mu.Unlock()
	}
	return nil
}

var errClosed = fmt.Errorf("local: %w", ratelimit.ErrClosed)

// check refuses what no limiter could decide, and a caller whose context has ended.
func (l *Limiter) check(ctx context.Context, key string, max int) error {
	switch {
	case l.closed.Load():
		return errClosed
	case key == "":
		return fmt.Errorf("local: %w", args.ErrKeyEmpty)
	case len(key) > args.MaxKeyLen:
		return fmt.Errorf("local: %w", args.ErrKeyTooLong)
	case max < 1:
		return fmt.Errorf("local: max %d: %w", max, args.ErrInvalidLimit)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("local: %w", err)
	}
	return nil
}

func (l *Limiter) shard(key string) *shard {
	return &l.shards[maphash.String(l.seed, key)&(numShards-1)]
}

// lock returns key's shard, locked, and key's entry, creating it if need be.
func (l *Limiter) lock(key string, max int) (*shard, *entry) {
	sh := l.shard(key)
	sh.mu.Lock()
	e := sh.keys[key]
	if e == nil {
		if len(sh.keys) >= l.perShard && !sh.evictIdle() {
			return sh, sh.overflow
		}
		e = &entry{}
		sh.keys[key] = e
	}
	e.max = max
	return sh, e
}

// evictIdle drops one idle key among the first few of the map's (random) order, reporting
// whether it found one.
func (sh *shard) evictIdle() bool {
	n := 0
	for k, e := range sh.keys {
		if e.idle() {
			delete(sh.keys, k)
			return true
		}
		if n++; n == evictSample {
			break
		}
	}
	return false
}

// limitOf returns e's limit in force under the call's max.
func (l *Limiter) limitOf(e *entry, max int) int {
	if l.aimd == nil {
		return max
	}
	return l.aimd.Limit(&e.adapt, max)
}

// tryLocked grants a permit of e if one is free and nobody waits; sh.mu is held.
func (l *Limiter) tryLocked(sh *shard, e *entry, max int) (concurrency.Permit, bool) {
	if e.waiters.Len() > 0 || e.held >= l.limitOf(e, max) {
		return concurrency.Permit{}, false
	}
	return l.grant(sh, e, max), true
}

// grant counts a new holder of e and returns its permit; sh.mu is held.
func (l *Limiter) grant(sh *shard, e *entry, max int) concurrency.Permit {
	e.held++
	h := l.holders.Get().(*holder)
	h.sh, h.e, h.max = sh, e, max
	if l.aimd != nil {
		h.start = l.now()
		h.grant = l.aimd.Grant(&e.adapt, e.held, max)
	}
	return concurrency.NewPermit(h, h.gen.Load())
}

// now reads the clock, for an adaptive limit.
func (l *Limiter) now() time.Duration {
	if l.clock != nil {
		return l.clock().Sub(l.start)
	}
	return time.Since(l.start)
}
