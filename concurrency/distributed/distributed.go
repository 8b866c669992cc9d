package distributed

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/breaker"
	"github.com/sluice-go/ratelimit/internal/nilarg"
)

// Limiter is a concurrency.Limiter whose permits live in Redis, so that every instance of a
// service shares them. Each acquisition is one atomic Lua script on one key, timed by the
// Redis clock; each release is another. It is safe for concurrent use.
type Limiter struct {
	client    redis.Scripter // the go-redis client (New), or nil
	seam      Client         // the Client (NewWith), or nil
	proc      processor      // client's Process, when it has one: the allocation-free path
	prefix    string
	ttl       time.Duration
	ttlArg    any // ttl in microseconds, boxed once
	timeout   time.Duration
	bgBound   time.Duration // bounds the limiter's own round trips
	poll      time.Duration
	queue     int
	onFailure OnFailure
	instances int          // 0: counted in Redis
	members   atomic.Int64 // the live limiters of the prefix, as last counted
	id        [16]byte     // hex: names this limiter's permits (id + sequence) and wake-ups
	idArg     any
	shardArg  any           // release.lua's flag: "s" to publish the wake-ups on shard channels
	seq       atomic.Uint64 // the last permit's sequence
	leases    sync.Pool     // of *lease
	local     *local.Limiter
	health    breaker.Breaker // opened by failures in a row: the calls then degrade at once
	epoch     time.Time       // the breaker's clock
	lastOK    atomic.Int64    // when Redis last answered, on the breaker's clock
	closed    atomic.Bool
	life      context.Context // ended by Close: stops the loops and the waits
	stop      context.CancelFunc
	kick      chan struct{} // wakes the background loop: a release to retry
	wg        sync.WaitGroup

	mu      sync.Mutex
	held    leaseList            // permits granted and not released, for renewal
	pending leaseList            // releases Redis has not confirmed, retried in the background
	queues  map[string]*keyQueue // callers waiting, by Redis key
	sub     *subscriber          // nil when the client cannot subscribe
}

var (
	_ concurrency.Limiter       = (*Limiter)(nil)
	_ concurrency.StatsReporter = (*Limiter)(nil)
)

// New returns a Limiter that keeps its permits in Redis through client, which may be any
// go-redis v9 client: *redis.Client (also from redis.NewFailoverClient, for Sentinel),
// *redis.ClusterClient, *redis.Ring, or a redis.UniversalClient holding one of them. Build
// it with ContextTimeoutEnabled: true (see WithTimeout).
//
// New does not contact Redis, so a service starts while Redis is down. Its goroutines stop
// at Close: one renews the leases of the permits held, retries the releases Redis did not
// confirm and counts the fleet; two per subscription connection receive the wake-ups of the
// keys waited for (one connection, connected at the first wait; on a Cluster, one per hash
// slot waited for; none on a Ring, whose waiters poll). It returns an error for a nil
// client, or a TTL shorter than 3 times the timeout.
func New(client redis.Scripter, opts ...Option) (*Limiter, error) {
	if nilarg.Is(client) {
		return nil, errors.New("distributed: New: nil client")
	}
	return newLimiter(client, nil, opts)
}

// newLimiter returns a Limiter on client, a go-redis one (New), or on seam (NewWith).
func newLimiter(client redis.Scripter, seam Client, opts []Option) (*Limiter, error) {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.ttl < time.Millisecond || (o.timeout > 0 && o.ttl < 3*o.timeout) {
		return nil, fmt.Errorf("distributed: New: WithTTL(%v) is shorter than 3 × WithTimeout(%v), or than 1 ms", o.ttl, o.timeout)
	}
	l := &Limiter{
		client:    client,
		seam:      seam,
		prefix:    o.prefix,
		ttl:       o.ttl,
		ttlArg:    o.ttl.Microseconds(),
		timeout:   o.timeout,
		bgBound:   o.timeout,
		poll:      o.poll,
		queue:     o.queue,
		onFailure: o.onFailure,
		instances: o.instances,
		kick:      make(chan struct{}, 1),
		queues:    make(map[string]*keyQueue),
	}
	localQueue := o.queue // the share's queue is as long as the limiter's
	if localQueue == 0 {
		localQueue = -1
	}
	l.local = local.New(local.WithQueue(localQueue, local.OldestFirst))
	l.health.Threshold, l.health.Cooldown = failuresInARow, int64(cooldown)
	l.epoch = time.Now()
	if l.bgBound == 0 {
		l.bgBound = o.ttl / 3
	}
	var b [8]byte
	_, _ = crand.Read(b[:])
	hex.Encode(l.id[:], b[:])
	l.idArg = l.id[:]
	l.members.Store(1)
	l.proc, _ = client.(processor)
	cluster, _ := client.(*redis.ClusterClient)
	l.shardArg = ""
	if cluster != nil || seam != nil && seam.Sharded() {
		l.shardArg = "s"
	}
	l.leases.New = func() any { return newLease(l) }
	l.life, l.stop = context.WithCancel(context.Background())
	if s, ok := client.(subscribeClient); ok && !isRing(client) {
		l.sub = newSubscriber(l, s, cluster)
	}
	l.wg.Go(l.background)
	return l, nil
}

// A slow Redis is not a dead one: a round trip that times out is tried again after a
// pause, within the caller's context, while Redis answered a call of the limiter's within
// the last TTL (or since New): the leases held elsewhere may all be live until then, and a
// share beside them would exceed max. Other failures (a refused connection, an error reply)
// count at once. failuresInARow of them open the breaker: the calls then degrade at once,
// but one every cooldown, which asks Redis first.
const (
	failuresInARow = 3
	cooldown       = 250 * time.Millisecond
)

// Acquire returns a permit for key once fewer than max live leases are held, in any
// process, as concurrency.Limiter.Acquire says. While none is free it waits, in this
// limiter's queue for the key (WithQueue, oldest first), for a release to wake it: a
// release in this process wakes the first waiter at once, one in another process through
// Redis pub/sub; without a wake-up the first waiter asks again every WithPoll. When Redis
// cannot answer it degrades to this instance's share of max, or returns the error
// (WithOnFailure). The errors wrap ratelimit.ErrInvalidArgument (an empty or too long key,
// max < 1), ratelimit.ErrClosed, concurrency.ErrQueueFull,
// ctx.Err(), ratelimit.ErrInvalidState (the key holds something else) and, with
// ReturnError, ratelimit.ErrTimeout (Redis did not answer within WithTimeout) or the
// client's error.
func (l *Limiter) Acquire(ctx context.Context, key string, max int) (concurrency.Permit, error) {
	if err := l.check(ctx, key, max); err != nil {
		return concurrency.Permit{}, err
	}
	ls, queued, wakes := l.newLease(key, max)
	if !queued {
		// Nobody of this limiter waits for the key: ask at once.
		p, ok, err := l.attempt(ctx, &ls, true)
		if ok || err != nil || ls == nil {
			return p, err
		}
	}
	w, err := l.enter(ctx, ls.rkey, max, wakes)
	if err != nil {
		l.putLease(ls)
		return concurrency.Permit{}, err
	}
	return l.wait(ctx, w, ls)
}

// TryAcquire returns a permit for key if fewer than max live leases are held, and never
// waits. It fails as Acquire does, concurrency.ErrQueueFull apart.
func (l *Limiter) TryAcquire(ctx context.Context, key string, max int) (concurrency.Permit, bool, error) {
	if err := l.check(ctx, key, max); err != nil {
		return concurrency.Permit{}, false, err
	}
	ls, _, _ := l.newLease(key, max)
	p, ok, err := l.attempt(ctx, &ls, false)
	if ls != nil && !ok {
		l.putLease(ls)
	}
	return p, ok, err
}

// attempt asks Redis for ls's permit while the breaker lets it, trying a failed round trip
// again while the caller's context lives and the breaker stays closed (TryAcquire too:
// it never waits for a permit, but may for Redis); otherwise it answers as failed does. ok is false
// with a nil error and no permit when Redis refused: ls is then the caller's again.
func (l *Limiter) attempt(ctx context.Context, lsp **lease, wait bool) (concurrency.Permit, bool, error) {
	var pause time.Duration
	for {
		ls := *lsp
		key, n := ls.key, ls.max
		admit, ticket := l.health.Admit(l.now())
		if !admit {
			l.putLease(ls)
			*lsp = nil
			return l.failed(ctx, key, n, errOpen, wait)
		}
		p, ok, err := l.try(ctx, ls)
		switch {
		case err == nil:
			l.health.Success(ticket)
			if now := l.now(); now-l.lastOK.Load() > int64(time.Millisecond) {
				l.lastOK.Store(now)
			}
			return p, ok, nil
		case ctx.Err() != nil || errors.Is(err, ratelimit.ErrInvalidState) || errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ratelimit.ErrTimeout):
			l.health.Inconclusive(ticket, l.now())
			*lsp = nil
			return concurrency.Permit{}, false, err
		}
		*lsp = nil // ls went to be released
		if l.onFailure == ReturnError {
			return concurrency.Permit{}, false, err // the caller's breaker decides
		}
		now := l.now()
		if !errors.Is(err, ratelimit.ErrTimeout) || now-l.lastOK.Load() >= int64(l.ttl) {
			// Redis is down (it refused the connection, it answered with an error), or has
			// not answered for a whole TTL: a failure, toward the breaker.
			l.health.Failure(ticket, now, err)
			if l.health.State() != breaker.Closed {
				return l.failed(ctx, key, n, err, wait)
			}
		} else {
			l.health.Inconclusive(ticket, now)
		}
		// Ask again after a pause that doubles, from the bound of a round trip up to the
		// poll, so that the retries do not slow a slow Redis further.
		pause = min(max(2*pause, l.timeout, time.Millisecond), l.poll)
		if !sleep(ctx, pause/2+rand.N(pause)) {
			return concurrency.Permit{}, false, fmt.Errorf("distributed: waiting for a permit: %w", ctx.Err())
		}
		if l.life.Err() != nil {
			return concurrency.Permit{}, false, errClosed
		}
		*lsp, _, _ = l.newLease(key, n)
	}
}

var errOpen = fmt.Errorf("distributed: Redis failed %d times in a row: %w", failuresInARow, ratelimit.ErrTimeout)

// now reads the breaker's clock.
func (l *Limiter) now() int64 { return int64(time.Since(l.epoch)) }

// failed answers a call Redis could not: the share of max from the local limiter, or the
// error (WithOnFailure). A caller whose own context ended gets the error whatever the
// option.
func (l *Limiter) failed(ctx context.Context, key string, max int, err error, wait bool) (concurrency.Permit, bool, error) {
	if l.onFailure == ReturnError || ctx.Err() != nil {
		return concurrency.Permit{}, false, err
	}
	if !wait {
		return l.local.TryAcquire(ctx, key, l.share(max))
	}
	p, err := l.local.Acquire(ctx, key, l.share(max))
	return p, err == nil, err
}

// share returns this instance's share of n permits while Redis cannot answer.
func (l *Limiter) share(n int) int {
	k := l.instances
	if k == 0 {
		k = int(l.members.Load())
	}
	return max(n/max(k, 1), 1)
}

// Close stops the limiter's goroutines and waits for them: a round trip in flight ends
// within its bound (WithTimeout; a third of the TTL without one). It wakes the callers
// waiting with ratelimit.ErrClosed, and makes every later Acquire and TryAcquire fail with
// it. The leases of the permits still held are no longer renewed (they end within the TTL
// unless released first), and the releases Redis had not confirmed are tried once more, then
// left to their leases' end. Permits may be released after Close: the release still reaches
// Redis, once. A second Close returns nil.
func (l *Limiter) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	l.stop()
	if l.sub != nil {
		l.sub.close()
	}
	l.wg.Wait()
	l.local.Close()
	return nil
}

// check refuses what no limiter could decide, and a caller whose context has ended.
func (l *Limiter) check(ctx context.Context, key string, max int) error {
	switch {
	case l.closed.Load():
		return errClosed
	case key == "":
		return fmt.Errorf("distributed: %w", args.ErrKeyEmpty)
	case len(key) > args.MaxKeyLen:
		return fmt.Errorf("distributed: %w", args.ErrKeyTooLong)
	case max < 1:
		return fmt.Errorf("distributed: max %d: %w", max, args.ErrInvalidLimit)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("distributed: %w", err)
	}
	return nil
}

var errClosed = fmt.Errorf("distributed: %w", ratelimit.ErrClosed)

// Stats returns a snapshot of this limiter's own permits, not the fleet's: the keys it holds
// permits of or waits for, the permits it holds (granted, not released, their leases not
// lost; those of its share while Redis cannot answer included), its callers waiting, and
// the lowest and highest limit among those keys (a key's limit: the highest max of the
// calls holding or waiting for it). Summed over every instance (the metrics' sum by
// policy), the in-flight figures are the fleet's. It asks nothing of Redis, and holds the
// limiter's lock for one pass over its permits and queues.
func (l *Limiter) Stats() concurrency.Stats {
	l.mu.Lock()
	limits := make(map[string]int)
	var s concurrency.Stats
	for ls := l.held.head; ls != nil; ls = ls.next {
		s.InFlight++
		limits[ls.rkey] = max(limits[ls.rkey], ls.max)
	}
	for key, q := range l.queues {
		if n := q.waiters.Len(); n > 0 {
			s.Waiting += n
			limits[key] = max(limits[key], q.most)
		}
	}
	l.mu.Unlock()
	for _, m := range limits {
		if s.Keys == 0 || m < s.MinLimit {
			s.MinLimit = m
		}
		s.MaxLimit = max(s.MaxLimit, m)
		s.Keys++
	}
	// The share's permits, without its keys: it tracks idle keys too.
	d := l.local.Stats()
	s.InFlight += d.InFlight
	s.Waiting += d.Waiting
	return s
}
