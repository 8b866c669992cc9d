// MEASUREMENT PROTOTYPE: NOT SHIPPED CODE.
//
// This file holds "sketch", a prototype of an in-process limiter that does not use
// golang.org/x/time/rate. It exists only so that this module's benchmarks can measure what
// replacing x/time/rate in our local backend (github.com/sluice-go/ratelimit/local) would
// buy. Nothing but this module's benchmarks and tests uses it, and it is not part of the
// ratelimit API. It is deliberately incomplete:
//
//   - no cleanup goroutine, no idle sweep and no cap on the number of buckets: buckets are
//     never removed, so memory grows with every new (key, limit);
//   - no Wait and no Close;
//   - only the token-bucket behaviour (GCRA), with no choice of algorithm.
//
// The algorithm is GCRA. Each bucket stores its theoretical arrival time (tat) as an
// atomic int64 of nanoseconds since the limiter's epoch, and a decision is one
// compare-and-swap on it; no lock is held while deciding beyond the shard's read lock that
// found the bucket.

package bench

import (
	"context"
	"hash/maphash"
	"math"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// sketchShards is the number of shards of a sketchLimiter's bucket map: a power of two, so
// a hash picks a shard with a mask.
const sketchShards = 64

// sketchLimiter is the prototype: a GCRA limiter over a sharded map, safe for concurrent
// use. Create it with newSketchLimiter. See the comment at the top of this file: it is for
// measurement only.
type sketchLimiter struct {
	epoch  time.Time // the zero of every tat; read through time.Since, which is monotonic
	seed   maphash.Seed
	shards [sketchShards]sketchShard
}

// sketchShard is one part of the bucket map. Buckets are found under the read lock and
// created under the write lock. The padding keeps two shards' locks off one cache line.
type sketchShard struct {
	mu      sync.RWMutex
	buckets map[string]*sketchBucket
	_       [128 - unsafe.Sizeof(sync.RWMutex{}) - unsafe.Sizeof(map[string]*sketchBucket(nil))]byte
}

// sketchBucket is one (key, rate, burst) bucket. The map is keyed by the key alone; buckets
// of the same key under other limits are chained through next.
type sketchBucket struct {
	rate     float64
	burst    int
	interval int64 // T: nanoseconds per token, round(1e9/rate), at least 1
	tau      int64 // τ: the tolerance, burst·T, saturating at math.MaxInt64
	// tat is the theoretical arrival time, in nanoseconds since the limiter's epoch. Its zero
	// value, at or before any now, means a full bucket.
	tat  atomic.Int64
	next *sketchBucket
}

// newSketchLimiter returns an empty sketchLimiter whose epoch is now.
func newSketchLimiter() *sketchLimiter {
	l := &sketchLimiter{epoch: time.Now(), seed: maphash.MakeSeed()}
	for i := range l.shards {
		l.shards[i].buckets = make(map[string]*sketchBucket)
	}
	return l
}

// Allow is AllowN with n = 1.
func (l *sketchLimiter) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return l.AllowN(ctx, key, limit, 1)
}

// AllowN takes n tokens from the bucket of (key, limit) if it can, with the same arguments,
// errors and Result fields as our local backend's AllowN. It does not look at ctx.
func (l *sketchLimiter) AllowN(_ context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	return l.allowAt(int64(time.Since(l.epoch)), key, limit, n)
}

// allowAt is AllowN at nowNs nanoseconds after the limiter's epoch. Tests call it to set the
// time; AllowN calls it with the monotonic clock.
func (l *sketchLimiter) allowAt(nowNs int64, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	if err := args.Check(key, limit, n); err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	return l.bucket(key, limit.Rate, limit.Burst).take(nowNs, n), nil
}

// find returns the bucket of (key, r, burst), or nil. The caller holds sh.mu.
func (sh *sketchShard) find(key string, r float64, burst int) *sketchBucket {
	for b := sh.buckets[key]; b != nil; b = b.next {
		if b.rate == r && b.burst == burst {
			return b
		}
	}
	return nil
}

// bucket returns the bucket of (key, r, burst), creating it, full, if there is none.
// Buckets are never removed, so a bucket found under the read lock stays valid after it.
func (l *sketchLimiter) bucket(key string, r float64, burst int) *sketchBucket {
	sh := &l.shards[maphash.String(l.seed, key)&(sketchShards-1)]
	sh.mu.RLock()
	b := sh.find(key, r, burst)
	sh.mu.RUnlock()
	if b != nil {
		return b
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if b = sh.find(key, r, burst); b == nil { // another goroutine may have made it meanwhile
		b = newSketchBucket(r, burst, sh.buckets[key])
		sh.buckets[key] = b
	}
	return b
}

// newSketchBucket returns a full bucket for (r, burst), chained in front of next.
func newSketchBucket(r float64, burst int, next *sketchBucket) *sketchBucket {
	// T is at least 1 ns (so a rate above 10⁹/s counts as 10⁹/s) and at most MaxInt64
	// (so a tiny rate saturates instead of overflowing the conversion).
	t := math.Round(1e9 / r)
	interval := int64(math.MaxInt64)
	if t < math.MaxInt64 {
		interval = max(int64(t), 1)
	}
	return &sketchBucket{
		rate:     r,
		burst:    burst,
		interval: interval,
		tau:      mulSat(int64(burst), interval),
		next:     next,
	}
}

// take decides for n tokens at now (nanoseconds since the epoch), 1 ≤ n ≤ burst: GCRA with
// one compare-and-swap on tat, retried if another decision changed tat in between. A
// denial leaves tat alone.
func (b *sketchBucket) take(now int64, n int) ratelimit.Result {
	limit := ratelimit.Limit{Rate: b.rate, Burst: b.burst}
	cost := mulSat(int64(n), b.interval)
	for {
		old := b.tat.Load()
		t := max(old, now)
		wait := t - now             // how far the bucket is in debt before this request; ≥ 0
		after := addSat(wait, cost) // new − now, if the request is allowed
		if after > b.tau {
			return ratelimit.Result{
				Limit:      limit,
				Remaining:  b.tokens(b.tau - wait),
				RetryAfter: time.Duration(after - b.tau),
				ResetAfter: time.Duration(wait),
			}
		}
		if b.tat.CompareAndSwap(old, addSat(t, cost)) {
			return ratelimit.Result{
				Allowed:    true,
				Limit:      limit,
				Remaining:  b.tokens(b.tau - after),
				ResetAfter: time.Duration(after),
			}
		}
	}
}

// tokens converts spare tolerance (ns) into whole tokens, floored and clamped to [0, burst].
func (b *sketchBucket) tokens(spare int64) int {
	if spare <= 0 {
		return 0
	}
	return int(min(spare/b.interval, int64(b.burst)))
}

// mulSat returns a·b for a, b ≥ 0, or math.MaxInt64 if that overflows.
func mulSat(a, b int64) int64 {
	if b != 0 && a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// addSat returns a+b for a, b ≥ 0, or math.MaxInt64 if that overflows.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Len counts the buckets, chains included. It walks every shard: for checking a benchmark's
// setup only.
func (l *sketchLimiter) Len() int {
	n := 0
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.RLock()
		for _, head := range sh.buckets {
			for b := head; b != nil; b = b.next {
				n++
			}
		}
		sh.mu.RUnlock()
	}
	return n
}
