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

// bucketKey names a bucket. It is a comparable struct rather than a formatted string so that
// looking a bucket up allocates nothing.
type bucketKey struct {
	key   string
	rate  float64
	burst int
}

// limitKey names an overflow bucket: the limit without the key.
type limitKey struct {
	rate  float64
	burst int
}

// shard is one part of the bucket map. The padding keeps two shards' locks off one cache
// line.
type shard struct {
	mu      sync.RWMutex
	buckets map[bucketKey]*rate.Limiter
	_       [128 - 32]byte
}

// store holds the buckets. Decisions run under the shard's read lock, and buckets are removed
// only under its write lock, so a decision can never land on a bucket that has just been
// dropped (its token would be lost and the key's fresh bucket would start full).
type store struct {
	seed     maphash.Seed
	perShard int // the cap on each shard's buckets
	shards   [numShards]shard

	overflowMu sync.Mutex
	overflow   map[limitKey]*rate.Limiter
}

func newStore(maxBuckets int) *store {
	s := &store{
		seed:     maphash.MakeSeed(),
		perShard: max(maxBuckets/numShards, 1),
		overflow: make(map[limitKey]*rate.Limiter),
	}
	for i := range s.shards {
		s.shards[i].buckets = make(map[bucketKey]*rate.Limiter)
	}
	return s
}

// capacity is the most buckets the store holds, overflow buckets aside.
func (s *store) capacity() int { return s.perShard * numShards }

func (s *store) shardFor(key string) *shard {
	return &s.shards[maphash.String(s.seed, key)&(numShards-1)]
}

// decide takes n tokens from the bucket k names, creating it if needed.
func (s *store) decide(k bucketKey, now time.Time, n int) ratelimit.Result {
	sh := s.shardFor(k.key)
	sh.mu.RLock()
	if b := sh.buckets[k]; b != nil {
		r := take(b, k, now, n)
		sh.mu.RUnlock()
		return r
	}
	sh.mu.RUnlock()

	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.buckets[k]
	if b == nil {
		if len(sh.buckets) >= s.perShard && !evictFull(sh, now) {
			return s.decideOverflow(k, now, n)
		}
		b = rate.NewLimiter(rate.Limit(k.rate), k.burst)
		sh.buckets[k] = b
	}
	return take(b, k, now, n)
}

// evictFull drops one full bucket among a few sampled ones (Go randomises where a map
// iteration starts) and reports whether it found one. The caller holds sh.mu for writing.
func evictFull(sh *shard, now time.Time) bool {
	seen := 0
	for k, b := range sh.buckets {
		if b.TokensAt(now) >= float64(k.burst) {
			delete(sh.buckets, k)
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
func (s *store) decideOverflow(k bucketKey, now time.Time, n int) ratelimit.Result {
	lk := limitKey{rate: k.rate, burst: k.burst}
	s.overflowMu.Lock()
	defer s.overflowMu.Unlock()
	b := s.overflow[lk]
	if b == nil {
		if len(s.overflow) >= maxOverflowLimits {
			// Thousands of distinct limits under a key flood: refuse rather than grow.
			limit := ratelimit.Limit{Rate: k.rate, Burst: k.burst}
			return ratelimit.Result{Limit: limit, RetryAfter: durationOf(1 / k.rate), ResetAfter: durationOf(float64(k.burst) / k.rate)}
		}
		b = rate.NewLimiter(rate.Limit(k.rate), k.burst)
		s.overflow[lk] = b
	}
	return take(b, k, now, n)
}

// sweep drops every bucket that has been full since cutoff: no request has taken a token
// from it since then, and dropping it changes no future decision.
func (s *store) sweep(cutoff time.Time) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, b := range sh.buckets {
			if fullSince(b, k.burst, cutoff) {
				delete(sh.buckets, k)
			}
		}
		sh.mu.Unlock()
	}
	s.overflowMu.Lock()
	for k, b := range s.overflow {
		if fullSince(b, k.burst, cutoff) {
			delete(s.overflow, k)
		}
	}
	s.overflowMu.Unlock()
}

// fullSince reports whether b was full at cutoff and untouched after it. For a time before
// its last update, TokensAt reports the tokens stored at that update, which are below burst
// after any admitted request; so b counts only if its last admission came before cutoff and
// it had refilled by then.
func fullSince(b *rate.Limiter, burst int, cutoff time.Time) bool {
	return b.TokensAt(cutoff) >= float64(burst)
}

// len returns the number of buckets, overflow buckets aside.
func (s *store) len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.RLock()
		n += len(sh.buckets)
		sh.mu.RUnlock()
	}
	return n
}

// take asks b for n tokens at now and describes the outcome. Reading the tokens first lets a
// denial cost one lock instead of two.
func take(b *rate.Limiter, k bucketKey, now time.Time, n int) ratelimit.Result {
	limit := ratelimit.Limit{Rate: k.rate, Burst: k.burst}
	tokens := b.TokensAt(now)
	if tokens >= float64(n) {
		if b.AllowN(now, n) {
			left := tokens - float64(n)
			return ratelimit.Result{
				Allowed:    true,
				Limit:      limit,
				Remaining:  wholeTokens(left, k.burst),
				ResetAfter: durationOf((float64(k.burst) - left) / k.rate),
			}
		}
		// Another goroutine took the tokens between the two calls.
		tokens = b.TokensAt(now)
	}
	return ratelimit.Result{
		Limit:      limit,
		Remaining:  wholeTokens(tokens, k.burst),
		RetryAfter: retryAfter(b, now, tokens, n, k.rate),
		ResetAfter: durationOf((float64(k.burst) - tokens) / k.rate),
	}
}

// retryAfter returns when n tokens will be there. The bucket counts its tokens in floating
// point, so the exact quotient can land an ulp short of n; asking the bucket itself about the
// answer, and nudging it forward when needed, keeps the promise that a request made after
// RetryAfter is allowed (if nobody else used the bucket in between).
func retryAfter(b *rate.Limiter, now time.Time, tokens float64, n int, r float64) time.Duration {
	d := max(durationOf((float64(n)-tokens)/r), 1)
	for range 4 {
		if b.TokensAt(now.Add(d)) >= float64(n) {
			break
		}
		d += 1 + d>>50
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
