package args

import (
	"math"

	"github.com/sluice-go/ratelimit"
)

// Valid reports whether Check(key, limit, n) returns nil. It is small enough to be inlined,
// so that a backend can take the common case, valid arguments, without a call, and call Check
// only to learn what is wrong.
func Valid(key string, limit ratelimit.Limit, n int) bool {
	// Rate ≤ MaxFloat64 rules out +Inf; the comparisons are false for NaN. Burst ≥ 1 follows
	// from 1 ≤ n ≤ Burst.
	return key != "" && len(key) <= ratelimit.MaxKeyLen &&
		limit.Rate > 0 && limit.Rate <= math.MaxFloat64 &&
		n >= 1 && n <= limit.Burst && limit.Burst <= ratelimit.MaxBurst
}
