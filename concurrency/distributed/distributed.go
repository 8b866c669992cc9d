package distributed

import (
	"context"
	crand "crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/internal/nilarg"
)

var (
	//go:embed acquire.lua
	acquireLua    string
	acquireScript = redis.NewScript(acquireLua)
	//go:embed release.lua
	releaseLua    string
	releaseScript = redis.NewScript(releaseLua)
	//go:embed renew.lua
	renewLua    string
	renewScript = redis.NewScript(renewLua)
)

// Limiter is a concurrency.Limiter whose permits live in Redis, so that every instance of a
// service shares them. Each acquisition is one atomic Lua script on one key, timed by the
// Redis clock; each release is another. It is safe for concurrent use.
type Limiter struct {
	client  redis.Scripter
	prefix  string
	ttl     time.Duration
	timeout time.Duration
	poll    time.Duration
	queue   int
	id      string        // names this limiter's permits: id:sequence
	seq     atomic.Uint64 // the last permit's sequence
	closed  atomic.Bool
	life    context.Context // ended by Close: stops the renewals and the waits
	stop    context.CancelFunc
	done    chan struct{} // closed when the renewal goroutine has returned

	mu      sync.Mutex
	leases  map[string]map[*lease]struct{} // held permits by Redis key, for renewal
	waiting map[string]waiters             // callers waiting, by Redis key
}

// waiters are the callers of a limiter waiting for one key: how many, and the highest max
// they asked for.
type waiters struct{ n, max int }

var (
	_ concurrency.Limiter       = (*Limiter)(nil)
	_ concurrency.StatsReporter = (*Limiter)(nil)
)

// New returns a Limiter that keeps its permits in Redis through client, which may be any
// go-redis v9 client: *redis.Client (also from redis.NewFailoverClient, for Sentinel),
// *redis.ClusterClient, *redis.Ring, or a redis.UniversalClient holding one of them. Build
// it with ContextTimeoutEnabled: true (see WithTimeout).
//
// New does not contact Redis, so a service starts while Redis is down. It starts one
// goroutine, which renews the leases of the permits the limiter holds until Close. It
// returns an error for a nil client, or a TTL shorter than 3 times the timeout.
func New(client redis.Scripter, opts ...Option) (*Limiter, error) {
	if nilarg.Is(client) {
		return nil, errors.New("distributed: New: nil client")
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.ttl < time.Millisecond || (o.timeout > 0 && o.ttl < 3*o.timeout) {
		return nil, fmt.Errorf("distributed: New: WithTTL(%v) is shorter than 3 × WithTimeout(%v), or than 1 ms", o.ttl, o.timeout)
	}
	var b [8]byte
	_, _ = crand.Read(b[:])
	l := &Limiter{
		client:  client,
		prefix:  o.prefix,
		ttl:     o.ttl,
		timeout: o.timeout,
		poll:    o.poll,
		queue:   o.queue,
		id:      hex.EncodeToString(b[:]),
		done:    make(chan struct{}),
		leases:  make(map[string]map[*lease]struct{}),
		waiting: make(map[string]waiters),
	}
	l.life, l.stop = context.WithCancel(context.Background())
	go l.renewLoop()
	return l, nil
}

// Acquire returns a permit for key once fewer than max live leases are held, in any
// process, as concurrency.Limiter.Acquire says. While none is free it asks Redis again
// every poll interval (WithPoll), with jitter, until ctx ends; at most WithQueue callers of
// this limiter wait for one key. The errors wrap ratelimit.ErrKeyEmpty,
// ratelimit.ErrKeyTooLong, ratelimit.ErrInvalidLimit (max < 1), ratelimit.ErrClosed,
// concurrency.ErrQueueFull, ctx.Err(), ratelimit.ErrTimeout (Redis did not answer within
// WithTimeout), ratelimit.ErrInvalidState (the key holds something else), or the client's
// error.
func (l *Limiter) Acquire(ctx context.Context, key string, max int) (concurrency.Permit, error) {
	if err := l.check(ctx, key, max); err != nil {
		return concurrency.Permit{}, err
	}
	rkey := l.prefix + key
	p, ok, err := l.try(ctx, rkey, max)
	if err != nil || ok {
		return p, err
	}
	if !l.enter(rkey, max) {
		return concurrency.Permit{}, fmt.Errorf("distributed: %w", concurrency.ErrQueueFull)
	}
	defer l.leave(rkey)
	t := time.NewTimer(l.jitter())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return concurrency.Permit{}, fmt.Errorf("distributed: waiting for a permit: %w", ctx.Err())
		case <-l.life.Done():
			return concurrency.Permit{}, fmt.Errorf("distributed: %w", ratelimit.ErrClosed)
		case <-t.C:
		}
		p, ok, err := l.try(ctx, rkey, max)
		if err != nil || ok {
			return p, err
		}
		t.Reset(l.jitter())
	}
}

// TryAcquire returns a permit for key if fewer than max live leases are held, and never
// waits. It fails as Acquire does, concurrency.ErrQueueFull apart.
func (l *Limiter) TryAcquire(ctx context.Context, key string, max int) (concurrency.Permit, bool, error) {
	if err := l.check(ctx, key, max); err != nil {
		return concurrency.Permit{}, false, err
	}
	return l.try(ctx, l.prefix+key, max)
}

// Close stops renewing the leases of the permits still held (they end within the TTL
// unless released first), wakes the callers waiting with ratelimit.ErrClosed, and makes
// every later Acquire and TryAcquire fail with it. Permits may be released after Close:
// the release still reaches Redis. A second Close returns nil.
func (l *Limiter) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	l.stop()
	<-l.done
	return nil
}

// check refuses what no limiter could decide, and a caller whose context has ended.
func (l *Limiter) check(ctx context.Context, key string, max int) error {
	switch {
	case l.closed.Load():
		return fmt.Errorf("distributed: %w", ratelimit.ErrClosed)
	case key == "":
		return fmt.Errorf("distributed: %w", ratelimit.ErrKeyEmpty)
	case len(key) > ratelimit.MaxKeyLen:
		return fmt.Errorf("distributed: %w", ratelimit.ErrKeyTooLong)
	case max < 1:
		return fmt.Errorf("distributed: max %d: %w", max, ratelimit.ErrInvalidLimit)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("distributed: %w", err)
	}
	return nil
}

// try runs the acquisition script once.
func (l *Limiter) try(ctx context.Context, rkey string, max int) (concurrency.Permit, bool, error) {
	ls := &lease{l: l, key: rkey, max: max, id: l.id + ":" + strconv.FormatUint(l.seq.Add(1), 10)}
	vals, err := l.run(ctx, acquireScript, rkey, max, l.ttl.Microseconds(), ls.id)
	if err != nil {
		// The script may have run and granted the permit while the reply was lost: free it,
		// so that a failed call never holds a permit until its lease ends. In the
		// background, within the limiter's deadline, so that a dead Redis costs the caller
		// one deadline, not two.
		if !errors.Is(err, ratelimit.ErrInvalidState) {
			go ls.free()
		}
		return concurrency.Permit{}, false, err
	}
	if len(vals) != 3 {
		return concurrency.Permit{}, false, fmt.Errorf("distributed: the script returned %d values, want 3", len(vals))
	}
	if vals[0] != 1 {
		return concurrency.Permit{}, false, nil
	}
	l.mu.Lock()
	set := l.leases[rkey]
	if set == nil {
		set = make(map[*lease]struct{})
		l.leases[rkey] = set
	}
	set[ls] = struct{}{}
	l.mu.Unlock()
	return concurrency.NewPermit(ls, 0), true, nil
}

// errTimeout is the cause of the limiter's own deadline: a failure of Redis, told apart
// from a caller whose own context ended first. It wraps context.DeadlineExceeded too, as
// every deadline does.
var errTimeout = fmt.Errorf("%w (%w)", ratelimit.ErrTimeout, context.DeadlineExceeded)

// run runs script on rkey within the limiter's deadline and returns its integers.
func (l *Limiter) run(ctx context.Context, script *redis.Script, rkey string, args ...any) ([]int64, error) {
	ctx, cancel := l.bound(ctx)
	defer cancel()
	vals, err := script.Run(ctx, l.client, []string{rkey}, args...).Int64Slice()
	if err != nil {
		return nil, l.classify(ctx, err)
	}
	return vals, nil
}

// bound returns ctx with the limiter's deadline, unless ctx's own comes first.
func (l *Limiter) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.timeout > 0 {
		if d, ok := ctx.Deadline(); !ok || time.Until(d) > l.timeout {
			return context.WithTimeoutCause(ctx, l.timeout, errTimeout)
		}
	}
	return ctx, func() {}
}

// classify wraps err with what it means: the caller's context ended, the limiter's deadline
// passed (ratelimit.ErrTimeout), the key holds another type (ratelimit.ErrInvalidState), or
// the client failed.
func (l *Limiter) classify(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		// A socket deadline set from ctx can fire a moment before ctx's own timer: wait for
		// it, so that the cause says whose deadline it was.
		<-ctx.Done()
		return fmt.Errorf("distributed: %w", context.Cause(ctx))
	}
	if strings.Contains(err.Error(), "WRONGTYPE") {
		return fmt.Errorf("distributed: %w: %w", ratelimit.ErrInvalidState, err)
	}
	return fmt.Errorf("distributed: %w", err)
}

// enter counts a waiting caller of rkey, asking for max, if the queue has room.
func (l *Limiter) enter(rkey string, max int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.waiting[rkey]
	if w.n >= l.queue {
		return false
	}
	l.waiting[rkey] = waiters{n: w.n + 1, max: maxInt(w.max, max)}
	return true
}

// maxInt is the builtin max, which Acquire's parameter of that name hides.
func maxInt(a, b int) int { return max(a, b) }

func (l *Limiter) leave(rkey string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.waiting[rkey]; w.n > 1 {
		l.waiting[rkey] = waiters{n: w.n - 1, max: w.max}
	} else {
		delete(l.waiting, rkey)
	}
}

// Stats returns a snapshot of this limiter's own permits, not the fleet's: the keys it holds
// permits of or waits for, the permits it holds (granted, not released, their leases not
// lost), its callers waiting, and the lowest and highest limit among those keys (a key's
// limit: the highest max of the calls holding or waiting for it). Summed over every instance
// (the metrics' sum by policy), the in-flight figures are the fleet's. It asks nothing of
// Redis, and holds the limiter's lock for one pass over its keys.
func (l *Limiter) Stats() concurrency.Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	limits := make(map[string]int, len(l.leases)+len(l.waiting))
	var s concurrency.Stats
	for key, set := range l.leases {
		s.InFlight += len(set)
		for ls := range set {
			limits[key] = max(limits[key], ls.max)
		}
	}
	for key, w := range l.waiting {
		s.Waiting += w.n
		limits[key] = max(limits[key], w.max)
	}
	for _, m := range limits {
		if s.Keys == 0 || m < s.MinLimit {
			s.MinLimit = m
		}
		s.MaxLimit = max(s.MaxLimit, m)
		s.Keys++
	}
	return s
}

// jitter returns a poll interval drawn from [poll/2, 3·poll/2).
func (l *Limiter) jitter() time.Duration {
	return l.poll/2 + rand.N(l.poll)
}

// lease is one permit held in Redis.
type lease struct {
	l        *Limiter
	key, id  string
	max      int // the max of the call that acquired it, for Stats
	released atomic.Bool
}

// ReleasePermit frees the permit, once: it stops renewing it and deletes it from Redis.
// The outcome is ignored, the Redis backend having no adaptive limit. A release that fails
// (Redis down) is not retried: the lease ends within the TTL.
func (ls *lease) ReleasePermit(_ uint64, _ concurrency.Outcome) {
	if !ls.released.CompareAndSwap(false, true) {
		return
	}
	ls.l.forget(ls)
	ls.free()
}

// free deletes the permit from Redis, within the limiter's deadline.
func (ls *lease) free() {
	ctx, cancel := ls.l.bound(context.Background())
	defer cancel()
	_ = releaseScript.Run(ctx, ls.l.client, []string{ls.key}, ls.id).Err()
}

// forget stops renewing ls.
func (l *Limiter) forget(ls *lease) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if set := l.leases[ls.key]; set != nil {
		delete(set, ls)
		if len(set) == 0 {
			delete(l.leases, ls.key)
		}
	}
}
