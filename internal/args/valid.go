package args

import (
	"math"
	"time"

	"github.com/sluice-go/ratelimit"
)

// Valid reports whether Check(key, limit, n) returns nil. It is small enough to be inlined,
// so that a backend can take the common case, valid arguments, without a call, and call Check
// only to learn what is wrong. It is false for every calendar quota, which Check must see.
func Valid(key string, limit ratelimit.Limit, n int) bool {
	// Rate ≤ MaxFloat64 rules out +Inf; the comparisons are false for NaN. Burst ≥ 1 follows
	// from 1 ≤ n ≤ Burst.
	return key != "" && len(key) <= MaxKeyLen &&
		limit.Rate > 0 && limit.Rate <= math.MaxFloat64 &&
		n >= 1 && n <= limit.Burst && limit.Burst <= MaxBurst &&
		uint(limit.Algorithm) <= uint(ratelimit.LeakyBucket) && noPeriod(&limit.Period) &&
		(limit.Warmup == 0 || validWarmup(limit.Warmup))
}

// validWarmup reports whether a warm-up is one Limit.Validate accepts; apart from Valid, so
// that the usual limit, without one, pays a single comparison.
func validWarmup(d time.Duration) bool {
	return d > 0 && d <= MaxWarmup && d%time.Microsecond == 0
}

// noPeriod reports whether p is the zero Period, field by field: the generated equality of
// the struct, which holds a string, is a call the hot path would pay.
func noPeriod(p *ratelimit.Period) bool {
	return p.Unit == 0 && p.Count == 0 && p.Anchor == 0 && len(p.Zone) == 0
}
