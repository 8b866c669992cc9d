package local

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// bucketKinds name the two ways a bucket keeps its state: "word", one compare-and-swap
// (where the algorithm and limit allow it), and "locked", under the bucket's mutex.
var bucketKinds = []string{"word", "locked"}

// testBucket returns a store of algorithm alg and a bucket of it for limit, first used at u,
// whose state is kept the way kind says.
func testBucket(t *testing.T, alg ratelimit.Algorithm, kind string, limit ratelimit.Limit, u int64) (*store, *bucket) {
	t.Helper()
	s := newStore(DefaultMaxBuckets)
	w := windowFor(alg, limit.Rate, limit.Burst)
	limit.Algorithm = alg
	b := s.newBucket("k", limit, u, w)
	if kind == "locked" && b.lk == nil {
		var st lockedState
		switch alg {
		case ratelimit.TokenBucket:
			st = newFastTokens(limit, u)
		case ratelimit.FixedWindow:
			st = &fixedWindow{window: w}
		case ratelimit.SlidingWindowCounter:
			st = &slidingCounter{window: w}
		}
		b = &bucket{key: b.key, rate: b.rate, kind: b.kind, lk: &locked{st: st}}
	}
	require.Equal(t, kind == "locked", b.lk != nil, "%v %v keeps its state in a word", alg, limit)
	return s, b
}

// isFull reports whether b would be dropped at u, without dropping it.
func isFull(s *store, b *bucket, u int64) bool {
	limit := b.limit()
	if b.lk != nil {
		return b.lk.st.full(limit, u)
	}
	w := windowFor(b.alg(), b.rate, b.burst())
	switch b.alg() {
	case ratelimit.FixedWindow:
		return fixedWindowFull(b.word.Load(), limit, u, w)
	case ratelimit.SlidingWindowCounter:
		return slidingCounterFull(b.word.Load(), limit, u, w)
	}
	if limit.Rate > scriptMaxRate {
		return wholeFull(b.word.Load(), limit, u)
	}
	return gcraFull(b.word.Load(), limit, u)
}
