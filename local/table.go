package local

import (
	"math/bits"
	"sync/atomic"
)

// table is one shard's bucket index: open addressing with linear probing over a power of two
// of slots. Lookups take no lock: they load the shard's current table and read slots with
// atomic loads. Every change (insert, remove, rehash) is made under the shard's mutex.
//
// A removed bucket's slot keeps a tombstone, so that the probe sequences through it stay
// whole; a rehash (into a new table, published atomically) drops the tombstones. A lookup
// running on a table that has just been replaced still finds only real buckets, since a
// rehash moves the same buckets, and a lookup may miss a bucket inserted meanwhile: the
// caller then looks again under the mutex. Readers can therefore see a bucket that is being
// removed; removal marks it dead first (see bucket), and a decision that meets a dead bucket
// starts over.
type table struct {
	mask  uint64 // len(slots) − 1
	slots []slot
}

// slot is one entry of a table. hash is a filter, read before b; a lookup compares the
// bucket itself, and the hash for its warm-up (see store.hash). The writer stores hash
// before b, so that a reader that loads a new b also sees its hash.
type slot struct {
	hash atomic.Uint64
	b    atomic.Pointer[bucket]
}

// minSlots is the size of a new or emptied table.
const minSlots = 8

func newTable(n int) *table {
	return &table{mask: uint64(n - 1), slots: make([]slot, n)}
}

// crowded reports whether a table of n slots, used of them not empty, must be rehashed: past
// seven eighths. Probes stay short (they seldom leave a cache line of four slots at three
// quarters) and a table is rehashed to at most half full, so that it spends its life
// between half and seven eighths full: small enough that the tables of 100,000 buckets
// (2 MB) mostly stay in cache.
func crowded(used, n int) bool { return 8*used > 7*n }

// slotsFor returns the table size for n buckets: at most half full after a rehash.
func slotsFor(n int) int {
	return max(minSlots, 1<<bits.Len(uint(2*n-1)))
}

// start returns where the probe sequence of hash h begins. The low bits of h pick the shard,
// so the slot comes from the bits above them.
func (t *table) start(h uint64) uint64 { return (h >> shardBits) & t.mask }

// find returns the bucket of (key, r, kind), or nil (see bucket.kind). It takes no lock;
// under the shard's mutex its answer is exact.
func (t *table) find(h uint64, key string, r float64, kind uint64) *bucket {
	for i := t.start(h); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		b := s.b.Load()
		if b == nil {
			return nil
		}
		if s.hash.Load() == h && b.key == key && b.rate == r && b.kind == kind {
			return b
		}
	}
}

// put stores b in the first empty slot or tombstone of h's probe sequence, and reports
// whether it filled an empty slot (rather than reusing a tombstone). The caller holds the
// mutex, has checked that b's bucket is not in the table, and leaves at least one slot empty.
func (t *table) put(h uint64, b, tomb *bucket) (filled bool) {
	for i := t.start(h); ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		old := s.b.Load()
		if old == nil || old == tomb {
			s.hash.Store(h)
			s.b.Store(b)
			return old == nil
		}
	}
}
