package bench

import (
	"math"
	"sync/atomic"
	"time"
	"unsafe"
)

// floorLimiter is the physical floor of an in-process limiter, for measurement only: what a
// decision costs when nothing but the unavoidable is done. It reads the monotonic clock once
// and runs GCRA on one atomic word of nanoseconds with a compare-and-swap, denying without a
// write; the word is found by hashing the address of the key's bytes, so there is no key to
// hash and no map to search, and it builds no Result. Every limiter that reads the time and
// shares its state between goroutines does at least this.
type floorLimiter struct {
	epoch    time.Time
	interval int64 // T, ns per token
	tau      int64 // how far a word may run ahead of now, ns
	mask     uintptr
	words    []atomic.Int64
}

// floorWords is how many words a floor limiter has: room for 100,000 keys, a fifth full.
const floorWords = 1 << 19

// newFloorLimiter returns a floor limiter under allow traffic (every call allowed) or deny
// traffic (every call denied). Its keys must be distinct strings whose bytes stay where
// they are; two that share a word share a bucket.
func newFloorLimiter(allow bool) *floorLimiter {
	f := &floorLimiter{epoch: time.Now(), mask: floorWords - 1, words: make([]atomic.Int64, floorWords)}
	if allow {
		f.interval, f.tau = 1, math.MaxInt64/4 // a token a nanosecond, and no end to the burst
	} else {
		f.interval, f.tau = 1<<60, 1<<60 // one token, back in 36 years
	}
	return f
}

func (f *floorLimiter) take(key string) (bool, error) {
	now := int64(time.Since(f.epoch))
	w := &f.words[(uintptr(unsafe.Pointer(unsafe.StringData(key)))*0x9E3779B97F4A7C15>>20)&f.mask]
	for {
		old := w.Load()
		next := max(old, now) + f.interval
		if next-now > f.tau {
			return false, nil
		}
		if w.CompareAndSwap(old, next) {
			return true, nil
		}
	}
}
