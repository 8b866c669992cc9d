package local

import (
	"hash/maphash"
	"math"
	"sync"
	"time"

	"github.com/sluice-go/ratelimit"
)

// numShards splits the bucket map so that goroutines working on different keys rarely meet on
// a lock. A power of two, so a hash picks a shard with a mask.
const numShards = 64

// evictionSamples is how many buckets a full shard inspects for a full one it can drop.
const evictionSamples = 8

// maxOverflowLimits bounds the overflow buckets, one per distinct limit seen at the cap.
const maxOverflowLimits = 1024

// state is one bucket's algorithm and its memory. Implementations do their own locking: the
// store calls them under a shared (read) lock.
type state interface {
	// take decides a request for n tokens at now, 1 ≤ n ≤ limit.Burst, and records it if it
	// is allowed. The Result's Limit is left for the caller to fill in.
	take(limit ratelimit.Limit, now time.Time, n int) ratelimit.Result
	// full reports whether the bucket, asked at t, is as it would be had it never been used,
	// so that dropping it changes no decision. Asked about a time before its last update it
	// must not claim more than it knew then.
	full(limit ratelimit.Limit, t time.Time) bool
}

// reserver is a state that can bound a reservation: a shaper (ratelimit.LeakyBucket), for
// Wait. reserve is take, except that a request that would be allowed with a Delay longer
// than maxDelay (≥ 0) takes nothing and is answered with Allowed false, RetryAfter 0 and
// the Delay it would have had.
type reserver interface {
	reserve(limit ratelimit.Limit, now time.Time, n int, maxDelay time.Duration) ratelimit.Result
}

// unbounded is the maxDelay of every decision but a reservation made by Wait.
const unbounded time.Duration = -1

// newStateFunc makes the state of a fresh bucket for a limit: one per algorithm.
type newStateFunc func(limit ratelimit.Limit) state

// bucket is one (key, rate, burst) bucket. The map is keyed by the key string alone, which
// hashes several times faster than a struct holding the limit too; the rare keys checked
// against more than one limit chain their buckets through next.
type bucket struct {
	limit ratelimit.Limit
	st    state
	next  *bucket
}

// take decides for n tokens and fills in the Result's Limit. A maxDelay of 0 or more bounds
// the Delay of a shaper's reservation (see reserver); unbounded leaves it free.
func (b *bucket) take(now time.Time, n int, maxDelay time.Duration) ratelimit.Result {
	var res ratelimit.Result
	if r, ok := b.reserver(maxDelay); ok {
		res = r.reserve(b.limit, now, n, maxDelay)
	} else {
		res = b.st.take(b.limit, now, n)
	}
	res.Limit = b.limit
	return res
}

// reserver returns b's state as a reserver when maxDelay bounds the decision; the usual,
// unbounded decision skips the type assertion.
func (b *bucket) reserver(maxDelay time.Duration) (reserver, bool) {
	if maxDelay == unbounded {
		return nil, false
	}
	r, ok := b.st.(reserver)
	return r, ok
}

// full reports whether dropping b at t would change no decision.
func (b *bucket) full(t time.Time) bool { return b.st.full(b.limit, t) }

// limitKey names an overflow bucket: the limit without the key.
type limitKey struct {
	rate  float64
	burst int
}

// shard is one part of the bucket map. The padding keeps two shards' locks off one cache
// line.
type shard struct {
	mu      sync.RWMutex
	buckets map[string]*bucket
	count   int // buckets in the shard, counting chains
	_       [128 - 40]byte
}

// find returns the bucket of (key, r, burst), or nil. The caller holds sh.mu.
func (sh *shard) find(key string, r float64, burst int) *bucket {
	for b := sh.buckets[key]; b != nil; b = b.next {
		if b.limit.Rate == r && b.limit.Burst == burst {
			return b
		}
	}
	return nil
}

// removeIf drops the buckets of key that drop approves, and returns how many it dropped.
// The caller holds sh.mu for writing.
func (sh *shard) removeIf(key string, head *bucket, drop func(*bucket) bool) int {
	removed := 0
	var kept *bucket
	for b := head; b != nil; {
		next := b.next
		if drop(b) {
			removed++
		} else {
			b.next, kept = kept, b
		}
		b = next
	}
	if removed == 0 {
		return 0
	}
	if kept == nil {
		delete(sh.buckets, key)
	} else {
		sh.buckets[key] = kept
	}
	sh.count -= removed
	return removed
}

// store holds the buckets. Decisions run under the shard's read lock, and buckets are removed
// only under its write lock, so a decision can never land on a bucket that has just been
// dropped (its token would be lost and the key's fresh bucket would start full).
type store struct {
	newState newStateFunc
	seed     maphash.Seed
	perShard int // the cap on each shard's buckets
	shards   [numShards]shard

	overflowMu sync.Mutex
	overflow   map[limitKey]*bucket
}

func newStore(maxBuckets int, newState newStateFunc) *store {
	s := &store{
		newState: newState,
		seed:     maphash.MakeSeed(),
		perShard: max(maxBuckets/numShards, 1),
		overflow: make(map[limitKey]*bucket),
	}
	for i := range s.shards {
		s.shards[i].buckets = make(map[string]*bucket)
	}
	return s
}

func (s *store) newBucket(r float64, burst int, next *bucket) *bucket {
	limit := ratelimit.Limit{Rate: r, Burst: burst}
	return &bucket{limit: limit, st: s.newState(limit), next: next}
}

func (s *store) shardFor(key string) *shard {
	return &s.shards[maphash.String(s.seed, key)&(numShards-1)]
}

// decide takes n tokens from the bucket of (key, r, burst), creating it if needed; maxDelay
// is unbounded except for a shaper's reservation made by Wait.
func (s *store) decide(key string, r float64, burst int, now time.Time, n int, maxDelay time.Duration) ratelimit.Result {
	sh := s.shardFor(key)
	sh.mu.RLock()
	if b := sh.find(key, r, burst); b != nil {
		res := b.take(now, n, maxDelay)
		sh.mu.RUnlock()
		return res
	}
	sh.mu.RUnlock()

	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.find(key, r, burst)
	if b == nil {
		if sh.count >= s.perShard && !sh.evictFull(now) {
			return s.decideOverflow(r, burst, now, n, maxDelay)
		}
		b = s.newBucket(r, burst, sh.buckets[key])
		sh.buckets[key] = b
		sh.count++
	}
	return b.take(now, n, maxDelay)
}

// evictFull drops the full buckets of the first of a few sampled keys that has any (Go
// randomises where a map iteration starts), and reports whether it dropped one. The caller
// holds sh.mu for writing.
func (sh *shard) evictFull(now time.Time) bool {
	seen := 0
	for key, head := range sh.buckets {
		if sh.removeIf(key, head, func(b *bucket) bool { return b.full(now) }) > 0 {
			return true
		}
		if seen++; seen == evictionSamples {
			break
		}
	}
	return false
}

// decideOverflow decides for a key that found no room: all such keys with one limit share
// one bucket, so a flood of new keys is limited as a whole instead of let through.
func (s *store) decideOverflow(r float64, burst int, now time.Time, n int, maxDelay time.Duration) ratelimit.Result {
	lk := limitKey{rate: r, burst: burst}
	s.overflowMu.Lock()
	defer s.overflowMu.Unlock()
	b := s.overflow[lk]
	if b == nil {
		if len(s.overflow) >= maxOverflowLimits {
			// Thousands of distinct limits under a key flood: refuse rather than grow.
			return ratelimit.Result{
				Limit:      ratelimit.Limit{Rate: r, Burst: burst},
				RetryAfter: durationOf(1 / r),
				ResetAfter: durationOf(float64(burst) / r),
			}
		}
		b = s.newBucket(r, burst, nil)
		s.overflow[lk] = b
	}
	return b.take(now, n, maxDelay)
}

// sweep drops every bucket that has been full since cutoff: no request has used it since then,
// and dropping it changes no future decision. A state asked about a time before its last
// update does not report itself full, so a bucket is full at cutoff only if its last
// admission came before cutoff and it had recovered by then.
func (s *store) sweep(cutoff time.Time) {
	idle := func(b *bucket) bool { return b.full(cutoff) }
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for key, head := range sh.buckets {
			sh.removeIf(key, head, idle)
		}
		sh.mu.Unlock()
	}
	s.overflowMu.Lock()
	for k, b := range s.overflow {
		if idle(b) {
			delete(s.overflow, k)
		}
	}
	s.overflowMu.Unlock()
}

// len returns the number of buckets, overflow buckets aside.
func (s *store) len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += sh.count
		sh.mu.RUnlock()
	}
	return n
}

// durationOf converts seconds to a Duration, rounded to the nearest nanosecond and capped at
// the largest Duration (a tiny rate can make a refill take longer than 292 years).
func durationOf(seconds float64) time.Duration {
	ns := math.Round(seconds * float64(time.Second))
	switch {
	case ns <= 0:
		return 0
	case ns >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(ns)
}
