package local

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// Buckets of limits with KeepUsage (see ratelimit.Limit.KeepUsage) are found by their key,
// algorithm and, for the fixed window and the sliding counter, window length, and decide
// under their mutex on a keepState, which applies the numbers of each call to the usage it
// holds. The arithmetic is the Redis backend's keep scripts', operation for operation.

// keepBit marks the kind of a bucket with KeepUsage: above every Burst (at most 2⁵²), below
// the algorithm, so that no other bucket has its kind.
const keepBit = 1 << 55

// identity returns the rate and kind by which the table finds the bucket of limit, whose
// Algorithm is named: its own, or for KeepUsage the window of a window algorithm whose
// counts carry (0 for the others) and its algorithm.
func identity(limit ratelimit.Limit) (float64, uint64) {
	if limit.KeepUsage {
		return keepIdentity(limit)
	}
	return limit.Rate, kindOf(limit)
}

// findLimit is find for the bucket of limit (see identity).
func (t *table) findLimit(h uint64, key string, limit ratelimit.Limit) *bucket {
	r, kind := identity(limit)
	return t.find(h, key, r, kind)
}

func keepIdentity(limit ratelimit.Limit) (float64, uint64) {
	var r float64
	if limit.Algorithm == ratelimit.FixedWindow || limit.Algorithm == ratelimit.SlidingWindowCounter {
		w, _ := args.Window(limit)
		r = float64(w)
	}
	return r, uint64(limit.Algorithm)<<56 | keepBit
}

// keepState is the state of a bucket with KeepUsage. A token or leaky bucket keeps its TAT
// in tokens at the Rate of its last write (an admission or a refund): the time since that
// write refills at that rate, and a call under another Rate carries the deficit it reads
// then to its own (see carry), which the bucket keeps if the call admits. The window
// algorithms keep their state in inner and get the limit of each call: the counts of a
// fixed window or a sliding counter carry as they are, and a sliding log is given the
// window of each call (w) before it decides.
type keepState struct {
	alg   ratelimit.Algorithm
	rate  float64 // token and leaky buckets: the Rate at the last write
	tat   float64 // token and leaky buckets: in tokens since tokenEpochUS at rate; −∞ when new
	w     int64   // a sliding log's window, µs: that of the call being decided
	inner lockedState
	// A sliding log's last admission, Unix µs, and its window: the log is forgotten once
	// that window has passed since (its Redis key expires then). marked: there was one.
	markT, markW int64
	marked       bool
}

// forget empties a sliding log forgotten at u (see markT).
func (ks *keepState) forget(u int64) {
	if ks.marked && ks.markT+ks.markW <= u {
		*ks.inner.(*slidingLog) = slidingLog{window: ks.w}
		ks.marked = false
	}
}

func newKeepState(limit ratelimit.Limit, w int64) *keepState {
	ks := &keepState{alg: limit.Algorithm, rate: limit.Rate, tat: math.Inf(-1), w: w}
	switch limit.Algorithm {
	case ratelimit.FixedWindow:
		ks.inner = &fixedWindow{window: w}
	case ratelimit.SlidingWindowCounter:
		ks.inner = &slidingCounter{window: w}
	case ratelimit.SlidingWindowLog:
		ks.inner = &slidingLog{window: w}
	}
	return ks
}

// keepWindow gives a sliding log with KeepUsage the window w of the call about to decide
// on st. The caller holds st's mutex.
func keepWindow(st lockedState, w int64) {
	if ks, ok := st.(*keepState); ok && ks.alg == ratelimit.SlidingWindowLog {
		ks.w = w
		ks.inner.(*slidingLog).window = w
	}
}

// carry returns the TAT to decide n tokens under limit on at us µs since tokenEpochUS, and
// the rate to decide them at. Under the bucket's own rate, its TAT. Under another, the
// deficit it reads at its own rate, a0 = tat − us·r0/10⁶: none, a full bucket (−∞); more
// than the request leaves room for, a denial, decided at the bucket's own rate, which is
// what refills it until an admission; otherwise a0 as a TAT at the call's rate. The keep
// scripts compute the same float64 operations.
func (ks *keepState) carry(limit ratelimit.Limit, us int64, n int) (float64, float64) {
	if ks.rate == limit.Rate {
		return ks.tat, limit.Rate
	}
	a0 := ks.tat - float64(us)*ks.rate/1e6
	switch {
	case !(a0 > 0):
		return math.Inf(-1), limit.Rate
	case a0 > float64(limit.Burst)-float64(n):
		return ks.tat, ks.rate
	}
	return float64(us)*limit.Rate/1e6 + a0, limit.Rate
}

func (ks *keepState) take(limit ratelimit.Limit, u int64, n int, maxDelay time.Duration) (verdict, time.Duration) {
	switch ks.alg {
	case ratelimit.TokenBucket:
		var word atomic.Uint64
		tat, rate := ks.carry(limit, u-tokenEpochUS, n)
		word.Store(math.Float64bits(tat))
		v, _ := takeGCRA(&word, rate, limit.Burst, u, n)
		if v.allowed { // at the call's rate: carry's denials are denials
			ks.tat, ks.rate = math.Float64frombits(word.Load()), rate
		}
		return v, 0
	case ratelimit.LeakyBucket:
		tat, rate := ks.carry(limit, u-tokenEpochUS, n)
		lb := leakyBucket{tat: tat}
		at := limit
		at.Rate = rate
		res := lb.reserve(at, time.UnixMicro(u), n, maxDelay)
		if res.Allowed {
			ks.tat, ks.rate = lb.tat, rate
		}
		return verdictOf(res)
	case ratelimit.SlidingWindowLog:
		// As the script, which trims the log only when it admits: a longer window later
		// may count again what a denial under a shorter one passed over.
		ks.forget(u)
		sl := ks.inner.(*slidingLog)
		at, gone, v := sl.decide(limit, u, n)
		if v.allowed {
			sl.head = (sl.head + gone) % max(len(sl.times), 1)
			sl.n -= gone
			sl.add(at, n, limit.Burst)
			ks.markT, ks.markW, ks.marked = u, ks.w, true
		}
		return v, 0
	}
	return ks.inner.take(limit, u, n, maxDelay)
}

func (ks *keepState) peek(limit ratelimit.Limit, u int64, n int) (verdict, time.Duration) {
	switch ks.alg {
	case ratelimit.TokenBucket, ratelimit.LeakyBucket:
		c := *ks // take on a copy
		return c.take(limit, u, n, unbounded)
	case ratelimit.SlidingWindowLog:
		ks.forget(u) // changes nothing a decision sees
	}
	return ks.inner.peek(limit, u, n)
}

func (ks *keepState) refund(limit ratelimit.Limit, u, at int64, n int) {
	switch ks.alg {
	case ratelimit.TokenBucket, ratelimit.LeakyBucket:
		// As refund_gcra.lua: under another rate the deficit moves to the call's, and a
		// bucket its own rate has refilled has nothing to give back.
		us, tat := u-tokenEpochUS, ks.tat
		if ks.rate != limit.Rate {
			a0 := tat - float64(us)*ks.rate/1e6
			if !(a0 > 0) {
				return
			}
			tat = float64(us)*limit.Rate/1e6 + a0
		}
		ks.tat, ks.rate = math.Float64frombits(gcraRefund(math.Float64bits(tat), limit, u, n)), limit.Rate
	case ratelimit.SlidingWindowLog:
		ks.forget(u)
		ks.inner.refund(limit, u, at, n)
	default:
		ks.inner.refund(limit, u, at, n)
	}
}

// full reads the TAT at the rate it was written at; limit, which a sweep makes from the
// bucket's identity, is not the limit's.
func (ks *keepState) full(limit ratelimit.Limit, u int64) bool {
	switch ks.alg {
	case ratelimit.TokenBucket, ratelimit.LeakyBucket:
		return ks.tat <= float64(u-tokenEpochUS)*ks.rate/1e6
	case ratelimit.SlidingWindowLog:
		// Not by the window of the last call: a longer one may count the entries again.
		return ks.inner.(*slidingLog).n == 0 || ks.marked && ks.markT+ks.markW <= u
	}
	return ks.inner.full(limit, u)
}
