package local

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/calendar"
)

// The bucket index is split into shards, so that goroutines creating buckets for different
// keys rarely meet on a lock. A power of two, so the low bits of a hash pick a shard.
const (
	shardBits = 6
	numShards = 1 << shardBits
)

// shard is one part of the index. Lookups read tab without a lock; mu orders every change.
// The padding keeps two shards' mutexes off one cache line.
type shard struct {
	mu   sync.Mutex
	tab  atomic.Pointer[table]
	live int            // buckets in the table
	used int            // slots not empty: buckets and tombstones
	_    [128 - 32]byte // to 128 bytes
}

// store holds the buckets of every algorithm; the limits it is given name theirs (see
// args.Resolve), and a bucket knows its own (bucket.kind). Decisions find their bucket without a
// lock and decide on it with a compare-and-swap or under the bucket's own mutex; creating, dropping
// and rehashing take the shard's mutex. A bucket is dropped only once it is marked dead, which
// a decision cannot race past (see bucket), so no decision lands on a dropped bucket: its
// token would be lost and the key's fresh bucket would start full.
type store struct {
	seed     maphash.Seed
	perShard int     // the cap on each shard's buckets
	tomb     *bucket // marks a removed bucket's slot; matches no key (keys are never empty)
	shards   [numShards]shard

	overflowMu sync.Mutex
	overflow   map[limitKey]*bucket

	zones calendar.Zones // the time zones of the quotas
}

func newStore(maxBuckets int) *store {
	s := &store{
		seed:     maphash.MakeSeed(),
		perShard: max(maxBuckets/numShards, 1),
		tomb:     &bucket{},
		overflow: make(map[limitKey]*bucket),
	}
	for i := range s.shards {
		s.shards[i].tab.Store(newTable(minSlots))
	}
	return s
}

// decide is decideAt at now, for the leaky bucket's Wait.
func (s *store) decide(key string, limit ratelimit.Limit, now time.Time, n, reserve int, maxDelay time.Duration) ratelimit.Result {
	v, delay := s.decideAt(key, limit, now.UnixMicro(), windowFor(limit.Algorithm, limit.Rate, limit.Burst), n, reserve, maxDelay)
	return v.result(limit, delay)
}

// decideAt takes n tokens at u (Unix µs) from the bucket of (key, limit), whose Algorithm
// is named, creating it if needed, and returns the verdict with a shaper's Delay. w is the window
// of the window algorithms, in µs (see args.Window), 0 for the others; reserve is the tokens the
// request must leave (see args.Reserve); maxDelay is unbounded except for a shaper's reservation
// made by Wait.
//
// A request with a reserve is decided as on the same bucket with Burst less the reserve,
// its usable part (see usable); the bucket, its state and its identity keep limit.
func (s *store) decideAt(key string, limit ratelimit.Limit, u, w int64, n, reserve int, maxDelay time.Duration) (verdict, time.Duration) {
	h := s.hash(key, &limit)
	sh := &s.shards[h&(numShards-1)]
	r, kind := limit.Rate, kindOf(limit) // identity, with find inlined
	if limit.KeepUsage {
		r, kind = keepIdentity(limit)
	}
	if b := sh.tab.Load().find(h, key, r, kind); b != nil {
		if b.lk == nil && limit.Algorithm == ratelimit.TokenBucket {
			// take, without its switch, for the commonest buckets.
			if v, ok := takeToken(&b.word, limit.Rate, limit.Burst-reserve, u, n); ok {
				return v, 0
			}
		} else if v, delay, ok := s.take(b, usable(limit, reserve), u, w, n, maxDelay); ok {
			return v, delay
		}
	}
	return s.decideLocked(sh, h, key, limit, u, w, n, reserve, maxDelay)
}

// decidePlain is decideAt for a token bucket of rate and burst, valid, without a warm-up
// or KeepUsage: the commonest decision, made from the two numbers, for a Limit (whose
// fields do not all fit in registers) is costly to copy from call to call.
func (s *store) decidePlain(key string, rate float64, burst int, u int64, n, reserve int) verdict {
	h := maphash.String(s.seed, key) // hash, for a limit with no warm-up and no period
	sh := &s.shards[h&(numShards-1)]
	if b := sh.tab.Load().find(h, key, rate, uint64(burst)|uint64(ratelimit.TokenBucket)<<56); b != nil && b.lk == nil {
		if v, ok := takeToken(&b.word, rate, burst-reserve, u, n); ok {
			return v
		}
	}
	v, _ := s.decideLocked(sh, h, key, ratelimit.Limit{Rate: rate, Burst: burst, Algorithm: ratelimit.TokenBucket}, u, 0, n, reserve, unbounded)
	return v
}

// usable is limit as a request that must leave reserve tokens sees it: Burst less reserve.
func usable(limit ratelimit.Limit, reserve int) ratelimit.Limit {
	limit.Burst -= reserve
	return limit
}

// decideLocked is decideAt under the shard's mutex, for a bucket that the lookup did not
// find, or found dead.
func (s *store) decideLocked(sh *shard, h uint64, key string, limit ratelimit.Limit, u, w int64, n, reserve int, maxDelay time.Duration) (verdict, time.Duration) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := s.findOrMake(sh, h, key, limit, u, w)
	if b == nil {
		return s.decideOverflow(limit, u, w, n, reserve, maxDelay)
	}
	// Buckets are dropped under this mutex, so b is alive until it is released.
	v, delay, _ := s.take(b, usable(limit, reserve), u, w, n, maxDelay)
	return v, delay
}

// findOrMake returns the bucket of (key, limit) in sh, whose hash is h, making it at u if
// there is room; nil if there is none. The caller holds sh.mu.
func (s *store) findOrMake(sh *shard, h uint64, key string, limit ratelimit.Limit, u, w int64) *bucket {
	if b := sh.tab.Load().findLimit(h, key, limit); b != nil {
		return b
	}
	if sh.live >= s.perShard && !s.evictFull(sh, u) {
		return nil
	}
	b := s.newBucket(key, limit, u, w)
	s.insert(sh, h, b)
	return b
}

// bucketFor returns the bucket of (key, limit), making it at u if needed, and the hash of
// key; at the cap, the overflow bucket of limit, or nil if there is none. The bucket may have
// been dropped by the time the caller holds it.
func (s *store) bucketFor(key string, limit ratelimit.Limit, u, w int64) (*bucket, uint64) {
	h := s.hash(key, &limit)
	sh := &s.shards[h&(numShards-1)]
	if b := sh.tab.Load().findLimit(h, key, limit); b != nil {
		return b, h
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if b := s.findOrMake(sh, h, key, limit, u, w); b != nil {
		return b, h
	}
	s.overflowMu.Lock()
	defer s.overflowMu.Unlock()
	return s.overflowBucket(limit, u, w), 0 // an overflow bucket's key is ""
}

// lookup returns the live bucket of (key, limit), or nil: it creates nothing.
func (s *store) lookup(key string, limit ratelimit.Limit) *bucket {
	h := s.hash(key, &limit)
	return s.shards[h&(numShards-1)].tab.Load().findLimit(h, key, limit)
}

// take decides on b, under limit: b's own, or less a reserve (see decideAt). It reports
// false, having decided nothing, if b is dead.
func (s *store) take(b *bucket, limit ratelimit.Limit, u, w int64, n int, maxDelay time.Duration) (verdict, time.Duration, bool) {
	if b.lk != nil {
		return b.lk.take(limit, u, w, n, maxDelay)
	}
	var v verdict
	var ok bool
	switch {
	case b.alg() == ratelimit.FixedWindow:
		v, ok = takeFixedWindow(&b.word, b.burst(), limit, u, w, n)
	case b.alg() == ratelimit.SlidingWindowCounter:
		v, ok = takeSlidingCounter(&b.word, b.burst(), limit, u, w, n)
	default:
		v, ok = takeToken(&b.word, limit.Rate, limit.Burst, u, n)
	}
	return v, 0, ok
}

// newBucket makes a fresh bucket for (key, limit), whose first decision comes at u.
func (s *store) newBucket(key string, limit ratelimit.Limit, u, w int64) *bucket {
	b := &bucket{key: key}
	b.rate, b.kind = identity(limit)
	if st := s.newState(limit, u, w); st != nil {
		b.lk = &locked{st: st}
	} else {
		b.word.Store(s.newWord(limit))
	}
	return b
}

// newState returns the state of a new bucket of limit that decides under a mutex, or nil
// for one whose state is its word.
func (s *store) newState(limit ratelimit.Limit, u, w int64) lockedState {
	// a quota's count carries as it is
	if limit.KeepUsage && limit.Algorithm != ratelimit.CalendarQuota {
		return newKeepState(limit, w)
	}
	switch limit.Algorithm {
	case ratelimit.TokenBucket:
		if limit.Warmup != 0 {
			return &warmBucket{period: limit.Warmup, burst: limit.Burst}
		}
		if limit.Rate > casMaxRate {
			return newFastTokens(limit, u)
		}
	case ratelimit.FixedWindow:
		if !fixedWindowPacks(limit, w) {
			return &fixedWindow{window: w}
		}
	case ratelimit.SlidingWindowCounter:
		if !slidingCounterPacks(limit, w) {
			return &slidingCounter{window: w}
		}
	case ratelimit.SlidingWindowLog:
		return &slidingLog{window: w}
	case ratelimit.LeakyBucket:
		return timeState{newLeakyBucket(limit)}
	case ratelimit.CalendarQuota:
		loc, _, _ := s.zones.Load(limit.Period.Zone) // validate has loaded it
		return &quota{period: limit.Period, loc: loc}
	}
	return nil
}

// kill marks b dead if it is full at u (Unix µs), and reports whether it did. The caller
// holds the mutex that guards b's place (its shard's, or the overflow buckets').
func (s *store) kill(b *bucket, u int64) bool {
	limit := b.limit()
	if b.lk != nil {
		return b.lk.kill(limit, u)
	}
	w := windowFor(limit.Algorithm, limit.Rate, limit.Burst)
	for {
		old := b.word.Load()
		switch old {
		case deadWord:
			return true
		case lockedWord:
			return false // an AllowAll is deciding on it
		}
		var full bool
		switch limit.Algorithm {
		case ratelimit.FixedWindow:
			full = fixedWindowFull(old, limit, u, w)
		case ratelimit.SlidingWindowCounter:
			full = slidingCounterFull(old, limit, u, w)
		case ratelimit.TokenBucket:
			if limit.Rate <= scriptMaxRate {
				full = gcraFull(old, limit, u)
			} else {
				full = wholeFull(old, limit, u)
			}
		}
		if !full {
			return false
		}
		if b.word.CompareAndSwap(old, deadWord) {
			return true
		}
	}
}

// insert adds b to sh's table, rehashing first if that would leave less than a quarter of
// the slots empty. The caller holds sh.mu.
func (s *store) insert(sh *shard, h uint64, b *bucket) {
	t := sh.tab.Load()
	if crowded(sh.used+1, len(t.slots)) {
		t = s.rehash(sh, slotsFor(sh.live+1))
	}
	if t.put(h, b, s.tomb) {
		sh.used++
	}
	sh.live++
}

// rehash moves sh's buckets into a new table of n slots, leaving the tombstones behind, and
// publishes it. The caller holds sh.mu.
func (s *store) rehash(sh *shard, n int) *table {
	old, t := sh.tab.Load(), newTable(n)
	for i := range old.slots {
		if b := old.slots[i].b.Load(); b != nil && b != s.tomb {
			t.put(old.slots[i].hash.Load(), b, s.tomb)
		}
	}
	sh.tab.Store(t)
	sh.used = sh.live
	return t
}

// remove drops the bucket in slot i of sh's table, which kill has marked dead. The caller
// holds sh.mu.
func (s *store) remove(sh *shard, t *table, i int) {
	t.slots[i].b.Store(s.tomb)
	sh.live--
}
