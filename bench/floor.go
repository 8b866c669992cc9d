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
// write. The word is found by the address of the key's bytes, in a table probed from a
// multiplicative hash of it: there is no key to hash or compare, and it builds no Result.
// Every limiter that reads the time and shares its state between goroutines does at least
// this much.
type floorLimiter struct {
	epoch    time.Time
	interval int64 // T, ns per token
	tau      int64 // how far a word may run ahead of now, ns
	mask     uintptr
	slots    []floorSlot
}

// floorSlot is a key's word, tagged with the address of the key's bytes (0: free).
type floorSlot struct {
	tag  atomic.Uintptr
	word atomic.Int64
}

// floorWords is how many words a floor limiter has: room for 100,000 keys, three quarters
// full, in 2 MB, close to what ours holds their buckets' index in.
const floorWords = 1 << 17

// newFloorLimiter returns a floor limiter under allow traffic (every call allowed) or deny
// traffic (every call denied). A key is the address of its bytes: the same string always
// finds its word, equal strings elsewhere in memory are other keys.
func newFloorLimiter(allow bool) *floorLimiter {
	f := &floorLimiter{epoch: time.Now(), mask: floorWords - 1, slots: make([]floorSlot, floorWords)}
	if allow {
		f.interval, f.tau = 1, math.MaxInt64/4 // a token a nanosecond, and no end to the burst
	} else {
		f.interval, f.tau = 1<<60, 1<<60 // one token, back in 36 years
	}
	return f
}

func (f *floorLimiter) take(key string) (bool, error) {
	now := int64(time.Since(f.epoch))
	w := f.word(uintptr(unsafe.Pointer(unsafe.StringData(key))))
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

// word returns the word of the key whose bytes are at p, claiming a free slot for it the
// first time.
func (f *floorLimiter) word(p uintptr) *atomic.Int64 {
	for i := p * 0x9E3779B97F4A7C15 >> 40; ; i++ {
		s := &f.slots[i&f.mask]
		tag := s.tag.Load()
		if tag == 0 && !s.tag.CompareAndSwap(0, p) {
			tag = s.tag.Load() // another goroutine claimed it, maybe for the same key
		}
		if tag == 0 || tag == p {
			return &s.word
		}
	}
}
