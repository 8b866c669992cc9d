package args

import (
	"fmt"

	"github.com/sluice-go/ratelimit"
)

// MaxKeepRate is the highest Limit.Rate of a token or leaky bucket with KeepUsage, in
// tokens per second, on every backend: its state is a float64 TAT counted in tokens since
// 2020 and carried from one rate to another with the Redis scripts' arithmetic, exact up
// to 10⁶ a second (the Redis backend's MaxRate).
const MaxKeepRate = 1e6

// CheckKeep returns nil when limit has no KeepUsage, or one that algorithm a carries: an
// error wrapping ratelimit.ErrNotSupported with a warm-up, whose cold start has no usage
// to carry, and one wrapping ratelimit.ErrInvalidArgument for a token bucket above
// MaxKeepRate.
func CheckKeep(a ratelimit.Algorithm, limit ratelimit.Limit) error {
	switch {
	case !limit.KeepUsage:
		return nil
	case limit.Warmup != 0:
		return fmt.Errorf("%w: KeepUsage with a warm-up", ratelimit.ErrNotSupported)
	case a == ratelimit.TokenBucket && limit.Rate > MaxKeepRate:
		return fmt.Errorf("%w: rate %v is above the maximum of %v per second of a token bucket with KeepUsage",
			ErrInvalidLimit, limit.Rate, MaxKeepRate)
	}
	return nil
}

// SameKeep reports whether two limits with KeepUsage and their Algorithm named (Resolve)
// share a bucket: same algorithm, and for a fixed window or a sliding counter, whose
// counts belong to windows of one length, the same window; for a calendar quota, the same
// period.
func SameKeep(a, b ratelimit.Limit) bool {
	if !a.KeepUsage || !b.KeepUsage || a.Algorithm != b.Algorithm {
		return false
	}
	switch a.Algorithm {
	case ratelimit.FixedWindow, ratelimit.SlidingWindowCounter:
		wa, _ := Window(a)
		wb, _ := Window(b)
		return wa == wb
	case ratelimit.CalendarQuota:
		return SamePeriod(a.Period, b.Period)
	}
	return true
}

// SamePeriod reports whether two quotas' periods are one: a Count or Anchor of 0 and of 1
// are the same.
func SamePeriod(a, b ratelimit.Period) bool {
	one := func(n int) int { return max(n, 1) }
	return a.Unit == b.Unit && a.Zone == b.Zone && one(a.Count) == one(b.Count) && one(a.Anchor) == one(b.Anchor)
}
