package local

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/sluice-go/ratelimit"
)

// What leaves the store, and what happens when nothing can: the idle sweep, eviction at the
// cap, and the overflow buckets of the keys that find no room (see WithMaxBuckets).

// evictionSamples is how many buckets a full shard inspects for a full one it can drop.
const evictionSamples = 8

// maxOverflowLimits bounds the overflow buckets, one per distinct limit seen at the cap.
const maxOverflowLimits = 1024

// limitKey names an overflow bucket: the limit, its Algorithm named, without the key.
type limitKey struct {
	rate   float64
	burst  int
	warmup time.Duration
	alg    ratelimit.Algorithm
	period ratelimit.Period
	keep   bool
}

// evictFull drops the first full bucket among a few sampled from a random place in sh's
// table, and reports whether it dropped one. The caller holds sh.mu.
func (s *store) evictFull(sh *shard, u int64) bool {
	t := sh.tab.Load()
	start := rand.Uint64() & t.mask
	seen := 0
	for j := range uint64(len(t.slots)) {
		i := (start + j) & t.mask
		b := t.slots[i].b.Load()
		if b == nil || b == s.tomb {
			continue
		}
		if s.kill(b, u) {
			s.remove(sh, t, int(i))
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
func (s *store) decideOverflow(limit ratelimit.Limit, u, w int64, n, reserve int, maxDelay time.Duration) (verdict, time.Duration) {
	s.overflowMu.Lock()
	defer s.overflowMu.Unlock()
	b := s.overflowBucket(limit, u, w)
	if b == nil {
		return overflowRefusal(limit), 0
	}
	// Overflow buckets are dropped under overflowMu, so b is alive.
	v, delay, _ := s.take(b, usable(limit, reserve), u, w, n, maxDelay)
	return v, delay
}

// overflowBucket returns the overflow bucket of limit, made if needed, or nil when there are
// too many already. The caller holds overflowMu.
func (s *store) overflowBucket(limit ratelimit.Limit, u, w int64) *bucket {
	lk := limitKey{rate: limit.Rate, burst: limit.Burst, warmup: limit.Warmup, alg: limit.Algorithm, period: limit.Period, keep: limit.KeepUsage}
	b := s.overflow[lk]
	if b == nil {
		if len(s.overflow) >= maxOverflowLimits {
			return nil
		}
		b = s.newBucket("", limit, u, w)
		s.overflow[lk] = b
	}
	return b
}

// overflowRefusal is the answer to a key that found no room when thousands of distinct
// limits have overflow buckets already, under a key flood: refuse rather than grow.
func overflowRefusal(limit ratelimit.Limit) verdict {
	return verdict{retry: durationOf(1 / limit.Rate), reset: durationOf(float64(limit.Burst) / limit.Rate)}
}

// sweep drops every bucket that has been full since cutoff (Unix µs): no request has used it
// since then, and dropping it changes no future decision. A state asked about a time before
// its last update does not report itself full, so a bucket is full at cutoff only if its
// last admission came before cutoff and it had recovered by then. A shard left mostly
// empty is rehashed into a smaller table.
func (s *store) sweep(cutoff int64) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		t := sh.tab.Load()
		for j := range t.slots {
			if b := t.slots[j].b.Load(); b != nil && b != s.tomb && s.kill(b, cutoff) {
				s.remove(sh, t, j)
			}
		}
		if sh.used > sh.live && (crowded(sh.used, len(t.slots)) || 8*sh.live < len(t.slots)) {
			s.rehash(sh, slotsFor(sh.live))
		}
		sh.mu.Unlock()
	}
	s.overflowMu.Lock()
	for k, b := range s.overflow {
		if s.kill(b, cutoff) {
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
		sh.mu.Lock()
		n += sh.live
		sh.mu.Unlock()
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
