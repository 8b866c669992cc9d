package local

import (
	"hash/maphash"
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluice-go/ratelimit"
)

// numShards splits the bucket map so that goroutines working on different keys rarely meet on
// a lock. A power of two, so a hash picks a shard with a mask.
const numShards = 64

// evictionSamples is how many buckets a full shard inspects for a full one it can drop.
const evictionSamples = 8

// maxOverflowLimits bounds the overflow buckets, one per distinct limit seen at the cap.
const maxOverflowLimits = 1024

// bucket is one (key, rate, burst) bucket. The map is keyed by the key string alone, which
// hashes several times faster than a struct holding the limit too; the rare keys checked
// against more than one limit chain their buckets through next.
type bucket struct {
	rate  float64
	burst int
	lim   *rate.Limiter
	next  *bucket
}

func newBucket(r float64, burst int, next *bucket) *bucket {
	return &bucket{rate: r, burst: burst, lim: rate.NewLimiter(rate.Limit(r), burst), next: next}
}

// full reports whether b holds Burst tokens at t.
func (b *bucket) full(t time.Time) bool { return b.lim.TokensAt(t) >= float64(b.burst) }

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
		if b.rate == r && b.burst == burst {
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
	seed     maphash.Seed
	perShard int // the cap on each shard's buckets
	shards   [numShards]shard

	overflowMu sync.Mutex
	overflow   map[limitKey]*bucket
}

func newStore(maxBuckets int) *store {
	s := &store{
		seed:     maphash.MakeSeed(),
		perShard: max(maxBuckets/numShards, 1),
		overflow: make(map[limitKey]*bucket),
	}
	for i := range s.shards {
		s.shards[i].buckets = make(map[string]*bucket)
	}
	return s
}

func (s *store) shardFor(key string) *shard {
	return &s.shards[maphash.String(s.seed, key)&(numShards-1)]
}

// decide takes n tokens from the bucket of (key, r, burst), creating it if needed.
func (s *store) decide(key string, r float64, burst int, now time.Time, n int) ratelimit.Result {
	sh := s.shardFor(key)
	sh.mu.RLock()
	if b := sh.find(key, r, burst); b != nil {
		res := b.take(now, n)
		sh.mu.RUnlock()
		return res
	}
	sh.mu.RUnlock()

	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.find(key, r, burst)
	if b == nil {
		if sh.count >= s.perShard && !sh.evictFull(now) {
			return s.decideOverflow(r, burst, now, n)
		}
		b = newBucket(r, burst, sh.buckets[key])
		sh.buckets[key] = b
		sh.count++
	}
	return b.take(now, n)
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
func (s *store) decideOverflow(r float64, burst int, now time.Time, n int) ratelimit.Result {
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
		b = newBucket(r, burst, nil)
		s.overflow[lk] = b
	}
	return b.take(now, n)
}

// sweep drops every bucket that has been full since cutoff: no request has taken a token
// from it since then, and dropping it changes no future decision. Asked about a time before
// its last update, TokensAt reports the tokens stored at that update, which are below burst
// after any admitted request; so a bucket is full at cutoff only if its last admission came
// before cutoff and it had refilled by then.
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

// take asks b for n tokens at now and describes the outcome. Reading the tokens first lets a
// denial skip the bucket's decision.
func (b *bucket) take(now time.Time, n int) ratelimit.Result {
	limit := ratelimit.Limit{Rate: b.rate, Burst: b.burst}
	tokens := b.lim.TokensAt(now)
	if tokens >= float64(n) {
		if b.lim.AllowN(now, n) {
			left := tokens - float64(n)
			return ratelimit.Result{
				Allowed:    true,
				Limit:      limit,
				Remaining:  wholeTokens(left, b.burst),
				ResetAfter: durationOf((float64(b.burst) - left) / b.rate),
			}
		}
		// Another goroutine took the tokens between the two calls.
		tokens = b.lim.TokensAt(now)
	}
	return ratelimit.Result{
		Limit:      limit,
		Remaining:  wholeTokens(tokens, b.burst),
		RetryAfter: retryAfter(b.lim, now, tokens, n, b.rate),
		ResetAfter: durationOf((float64(b.burst) - tokens) / b.rate),
	}
}

// retryAfter returns when n tokens will be there. The bucket counts its tokens in floating
// point, so the exact quotient can land an ulp short of n; asking the bucket itself about the
// answer, and nudging it forward when needed, keeps the promise that a request made after
// RetryAfter is allowed (if nobody else used the bucket in between).
func retryAfter(b *rate.Limiter, now time.Time, tokens float64, n int, r float64) time.Duration {
	d := max(durationOf((float64(n)-tokens)/r), 1)
	for range 4 {
		step := 1 + d>>50
		if d > math.MaxInt64-step || b.TokensAt(now.Add(d)) >= float64(n) {
			break
		}
		d += step
	}
	return d
}

// wholeTokens rounds tokens down and clamps them to [0, burst]. Rounding down matches the
// bucket's own view: 0.9999 tokens admit nothing.
func wholeTokens(tokens float64, burst int) int {
	if tokens <= 0 {
		return 0
	}
	return min(int(tokens), burst)
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
