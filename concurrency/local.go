package concurrency

import (
	"context"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
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

// Local is a Limiter whose permits are counted in this process. It is safe for concurrent
// use. Build it with NewLocal.
type Local struct {
	queue    int // waiters per key; 0: no queue
	order    Order
	perShard int
	aimd     *AIMD // nil: the limit is each call's max
	clock    func() time.Time
	start    time.Time // the monotonic origin of now, without a clock
	seed     maphash.Seed
	holders  sync.Pool // of *holder
	closed   atomic.Bool
	shards   [numShards]shard
}

var _ Limiter = (*Local)(nil)

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
	adapt   adaptive
}

// idle reports whether the entry carries no state worth keeping: no holder, no waiter. Its
// adaptive limit is lost when it is dropped.
func (e *entry) idle() bool { return e.held == 0 && e.waiters.n == 0 }

// NewLocal returns a Local configured by opts. It starts no goroutine. It panics when
// WithAdaptive is given an AIMD that AIMD.Validate refuses.
func NewLocal(opts ...Option) *Local {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	l := &Local{
		queue:    o.queue,
		order:    o.order,
		perShard: max(o.maxKeys/numShards, 1),
		clock:    o.clock,
		start:    time.Now(),
		seed:     maphash.MakeSeed(),
	}
	if o.adaptive != nil {
		if err := o.adaptive.Validate(); err != nil {
			panic(fmt.Sprintf("concurrency: NewLocal: WithAdaptive: %v", err))
		}
		a := o.adaptive.withDefaults()
		l.aimd = &a
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
// ratelimit.ErrClosed, ErrQueueFull or ctx.Err().
func (l *Local) Acquire(ctx context.Context, key string, max int) (Permit, error) {
	if err := l.check(ctx, key, max); err != nil {
		return Permit{}, err
	}
	sh, e := l.lock(key, max)
	if p, ok := l.tryLocked(sh, e, max); ok {
		sh.mu.Unlock()
		return p, nil
	}
	if l.closed.Load() {
		// Close has failed this shard's waiters already, or will once it holds the lock.
		sh.mu.Unlock()
		return Permit{}, errClosed
	}
	if e.waiters.n >= l.queue {
		if l.order == OldestFirst || l.queue == 0 {
			sh.mu.Unlock()
			return Permit{}, errFull
		}
		e.waiters.popFront().finish(Permit{}, errFull)
	}
	w := &waiter{max: max, ready: make(chan struct{})}
	e.waiters.pushBack(w)
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
		w.permit.ReleaseWith(Ignored)
	} else {
		e.waiters.remove(w)
		sh.mu.Unlock()
	}
	return Permit{}, fmt.Errorf("concurrency: waiting for a permit: %w", ctx.Err())
}

// errFull is returned as is: a refusal needs no allocation.
var errFull = fmt.Errorf("%w: no permit free and no room to wait", ErrQueueFull)

// TryAcquire returns a permit for key if fewer than max are held and nobody waits for one,
// and never waits. It fails as Acquire does, ErrQueueFull apart: ok = false says that no
// permit is free.
func (l *Local) TryAcquire(ctx context.Context, key string, max int) (Permit, bool, error) {
	if err := l.check(ctx, key, max); err != nil {
		return Permit{}, false, err
	}
	sh, e := l.lock(key, max)
	p, ok := l.tryLocked(sh, e, max)
	sh.mu.Unlock()
	return p, ok, nil
}

// Limit returns the limit in force for key: the max of its last call or, with
// WithAdaptive, its adaptive limit under that max. ok is false when the limiter does not
// track key (it was never used, or it was dropped while idle).
func (l *Local) Limit(key string) (limit int, ok bool) {
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
func (l *Local) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, e := range sh.keys {
			for e.waiters.n > 0 {
				e.waiters.popFront().finish(Permit{}, errClosed)
			}
		}
		for e := sh.overflow; e.waiters.n > 0; {
			e.waiters.popFront().finish(Permit{}, errClosed)
		}
		sh.mu.Unlock()
	}
	return nil
}

var errClosed = fmt.Errorf("concurrency: %w", ratelimit.ErrClosed)

// check refuses what no limiter could decide, and a caller whose context has ended.
func (l *Local) check(ctx context.Context, key string, max int) error {
	switch {
	case l.closed.Load():
		return errClosed
	case key == "":
		return fmt.Errorf("concurrency: %w", args.ErrKeyEmpty)
	case len(key) > ratelimit.MaxKeyLen:
		return fmt.Errorf("concurrency: %w", args.ErrKeyTooLong)
	case max < 1:
		return fmt.Errorf("concurrency: max %d: %w", max, args.ErrInvalidLimit)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("concurrency: %w", err)
	}
	return nil
}

func (l *Local) shard(key string) *shard {
	return &l.shards[maphash.String(l.seed, key)&(numShards-1)]
}

// lock returns key's shard, locked, and key's entry, creating it if need be.
func (l *Local) lock(key string, max int) (*shard, *entry) {
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
func (l *Local) limitOf(e *entry, max int) int {
	if l.aimd == nil {
		return max
	}
	return l.aimd.bound(&e.adapt, max)
}

// tryLocked grants a permit of e if one is free and nobody waits; sh.mu is held.
func (l *Local) tryLocked(sh *shard, e *entry, max int) (Permit, bool) {
	if e.waiters.n > 0 || e.held >= l.limitOf(e, max) {
		return Permit{}, false
	}
	return l.grant(sh, e, max), true
}

// grant counts a new holder of e and returns its permit; sh.mu is held.
func (l *Local) grant(sh *shard, e *entry, max int) Permit {
	e.held++
	h := l.holders.Get().(*holder)
	h.sh, h.e, h.max = sh, e, max
	if l.aimd != nil {
		h.start = l.now()
		h.epoch = e.adapt.epoch
		h.busy = 2*e.held >= l.limitOf(e, max)
	}
	return Permit{r: h, gen: h.gen.Load()}
}

// now reads the clock, for an adaptive limit.
func (l *Local) now() time.Duration {
	if l.clock != nil {
		return l.clock().Sub(l.start)
	}
	return time.Since(l.start)
}
