package local

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
)

// bucket is one (key, rate, burst, algorithm) bucket, and warm-up (see store.hash), or one
// bucket of a limit with KeepUsage (see identity). Buckets are found without a lock (see table), so
// a bucket may be dropped while a decision holds it: every kind of bucket can be marked
// dead, atomically with the check that it is full, and a decision that meets a dead bucket
// starts over from the lookup.
//
// Two kinds share this struct. The token bucket up to casMaxRate and the window counters
// whose state packs into 64 bits keep their whole state in word and decide with one
// compare-and-swap on it (deadWord marks them dead). Every other bucket keeps its state in
// lk, under lk's mutex, and word is unused.
type bucket struct {
	key  string
	rate float64
	// kind is the rest of the bucket's identity, its Burst and its algorithm (see kindOf):
	// one comparison for a lookup, and a bucket stays 48 bytes.
	kind uint64
	word atomic.Uint64
	lk   *locked
}

// kindOf returns the kind of the buckets of a valid limit whose Algorithm is named (see
// args.Resolve): its Burst, at most 2⁵², in the low 56 bits, its algorithm in the high 8.
func kindOf(limit ratelimit.Limit) uint64 {
	return uint64(limit.Burst) | uint64(limit.Algorithm)<<56
}

// burst is the bucket's Burst.
func (b *bucket) burst() int { return int(b.kind & (1<<56 - 1)) }

// alg is the bucket's algorithm, never ratelimit.DefaultAlgorithm.
func (b *bucket) alg() ratelimit.Algorithm { return ratelimit.Algorithm(b.kind >> 56) }

// deadWord is the word of a dropped bucket. No state produces it: as a float64 TAT it is a
// NaN, as a whole-token TAT it is 2⁶³ − 1 tokens, and as a packed window state it would need
// a window index past the year 2255.
const deadWord = ^uint64(0)

// lockedWord is the word of a bucket that an AllowAll holds (see multi.go): its state is
// set aside until the AllowAll stores the next one, and a decision that meets it waits.
// No state produces it either, for the reasons deadWord's says; it is the only word
// between the states and deadWord, so that one comparison, old >= lockedWord, keeps both
// out of the hot path.
const lockedWord = deadWord - 1

// limit is the bucket's limit, but for its warm-up, which only its state knows.
func (b *bucket) limit() ratelimit.Limit {
	return ratelimit.Limit{Rate: b.rate, Burst: b.burst(), Algorithm: b.alg()}
}

// verdict is a decision as the algorithms make it: a ratelimit.Result without its Limit and
// Delay. It has four fields, so that the compiler keeps it in registers from call to call; a
// Result has more and goes through memory, and copying it (wide loads of what narrow stores
// have just written) costs more than a token bucket's whole decision. AllowN builds the
// Result once, at the end.
type verdict struct {
	allowed   bool
	remaining int
	retry     time.Duration // Result.RetryAfter
	reset     time.Duration // Result.ResetAfter
}

// result is v as a Result for limit, with a shaper's delay.
func (v verdict) result(limit ratelimit.Limit, delay time.Duration) ratelimit.Result {
	return ratelimit.Result{
		Allowed:    v.allowed,
		Limit:      limit,
		Remaining:  v.remaining,
		RetryAfter: v.retry,
		ResetAfter: v.reset,
		Delay:      delay,
	}
}

// locked holds the state of a bucket that decides under a mutex.
type locked struct {
	mu   sync.Mutex
	dead bool
	st   lockedState
}

// lockedState is the state of a bucket that decides under its locked's mutex. Times are
// Unix microseconds.
type lockedState interface {
	// take decides a request for n tokens at u, 1 ≤ n ≤ limit.Burst, records it if it is
	// allowed, and returns the verdict with a shaper's Delay. maxDelay bounds a shaper's
	// reservation (see reserver); unbounded leaves it free, and every other algorithm ignores
	// it and returns no Delay.
	take(limit ratelimit.Limit, u int64, n int, maxDelay time.Duration) (verdict, time.Duration)
	// peek returns what take would answer at u, with no bound on a shaper's Delay, and
	// changes nothing.
	peek(limit ratelimit.Limit, u int64, n int) (verdict, time.Duration)
	// refund gives n tokens back at u, never beyond a full bucket, for a request charged at
	// at, or noCharge (see Limiter.Refund).
	refund(limit ratelimit.Limit, u, at int64, n int)
	// full reports whether the bucket, asked at u, is as it would be had it never been used,
	// so that dropping it changes no decision. Asked about a time before its last update it
	// must not claim more than it knew then.
	full(limit ratelimit.Limit, u int64) bool
}

// take decides under the mutex, for a limit whose window is w (see keepWindow); it reports false,
// having decided nothing, if the bucket has been dropped.
func (lk *locked) take(limit ratelimit.Limit, u, w int64, n int, maxDelay time.Duration) (verdict, time.Duration, bool) {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.dead {
		return verdict{}, 0, false
	}
	keepWindow(lk.st, w)
	v, delay := lk.st.take(limit, u, n, maxDelay)
	return v, delay, true
}

// kill marks the bucket dead if it is full at u, and reports whether it did.
func (lk *locked) kill(limit ratelimit.Limit, u int64) bool {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if !lk.dead && lk.st.full(limit, u) {
		lk.dead = true
	}
	return lk.dead
}

// state is a bucket state that reads time as a time.Time and does its own locking: the leaky
// bucket's. timeState adapts it to lockedState.
type state interface {
	// take decides a request for n tokens at now, as lockedState's take.
	take(limit ratelimit.Limit, now time.Time, n int) ratelimit.Result
	// peek and refund are lockedState's, on a time.Time.
	peek(limit ratelimit.Limit, now time.Time, n int) ratelimit.Result
	refund(limit ratelimit.Limit, now time.Time, n int)
	// full reports whether the bucket is as new at t, as lockedState's full.
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

// timeState adapts a state to lockedState.
type timeState struct{ st state }

func (ts timeState) take(limit ratelimit.Limit, u int64, n int, maxDelay time.Duration) (verdict, time.Duration) {
	var res ratelimit.Result
	if r, ok := ts.st.(reserver); ok && maxDelay != unbounded {
		res = r.reserve(limit, time.UnixMicro(u), n, maxDelay)
	} else {
		res = ts.st.take(limit, time.UnixMicro(u), n)
	}
	return verdictOf(res)
}

func (ts timeState) peek(limit ratelimit.Limit, u int64, n int) (verdict, time.Duration) {
	return verdictOf(ts.st.peek(limit, time.UnixMicro(u), n))
}

func (ts timeState) refund(limit ratelimit.Limit, u, _ int64, n int) {
	ts.st.refund(limit, time.UnixMicro(u), n)
}

func (ts timeState) full(limit ratelimit.Limit, u int64) bool {
	return ts.st.full(limit, time.UnixMicro(u))
}

// verdictOf splits res into a verdict and its Delay.
func verdictOf(res ratelimit.Result) (verdict, time.Duration) {
	return verdict{allowed: res.Allowed, remaining: res.Remaining, retry: res.RetryAfter, reset: res.ResetAfter}, res.Delay
}
