package args

import (
	"fmt"

	"github.com/sluice-go/ratelimit"
)

// MaxShapingRate is the highest Limit.Rate a shaper (ratelimit.LeakyBucket) accepts, in
// requests per second: one per microsecond. A shaper counts its delays in whole
// microseconds, so it could not space requests any closer; the Redis backend's MaxRate is
// the same bound for all its algorithms.
const MaxShapingRate = 1e6

// MaxWarmupRate is the highest Limit.Rate of a limit with a warm-up, in tokens per second,
// on every backend: the warm-up's clock counts float64 tokens since the warm-up began, as
// the Redis scripts count them since 2020, and at 10⁶ a second that count holds single
// tokens exactly for 285 years.
const MaxWarmupRate = 1e6

// Resolve returns limit with its Algorithm named: its own, or def, the limiter's default,
// when it names none (ratelimit.DefaultAlgorithm). Both backends key, validate and decide a
// limit as Resolve names it, so that a limit naming the limiter's default and the same limit
// naming none are one bucket.
func Resolve(limit ratelimit.Limit, def ratelimit.Algorithm) ratelimit.Limit {
	if limit.Algorithm == ratelimit.DefaultAlgorithm {
		limit.Algorithm = def
	}
	return limit
}

// CheckDefault returns nil when a may be a limiter's default algorithm (local.WithAlgorithm,
// distributed.WithAlgorithm): one of the ratelimit package's Algorithm constants, which
// Limit.Validate is the owner of. Any other value could decide nothing, so the backends'
// constructors refuse it rather than fail every call.
func CheckDefault(a ratelimit.Algorithm) error {
	if err := (ratelimit.Limit{Rate: 1, Burst: 1, Algorithm: a}).Validate(); err != nil && a != ratelimit.CalendarQuota {
		return fmt.Errorf("WithAlgorithm(%v): not one of the ratelimit package's algorithms", a)
	}
	return nil
}

// CheckAlgorithm returns nil when limit suits algorithm a, beyond what Check verifies, or an
// error wrapping ratelimit.ErrInvalidArgument, or ratelimit.ErrNotSupported for a warm-up on an
// algorithm without one (see CheckWarmup). Both backends call it after Check, so that they
// reject the same limits with the same errors before doing any work.
func CheckAlgorithm(a ratelimit.Algorithm, limit ratelimit.Limit) error {
	if err := CheckWarmup(a, limit); err != nil {
		return err
	}
	if err := CheckKeep(a, limit); err != nil {
		return err
	}
	switch a {
	case ratelimit.FixedWindow, ratelimit.SlidingWindowCounter:
		_, err := Window(limit) // W must be a whole number of µs, on both backends
		return err
	case ratelimit.SlidingWindowLog:
		_, err := LogWindow(limit)
		return err
	case ratelimit.LeakyBucket:
		if limit.Rate > MaxShapingRate {
			return fmt.Errorf("%w: rate %v is above the leaky bucket's maximum of %v per second: it spaces requests by whole microseconds",
				ErrInvalidLimit, limit.Rate, MaxShapingRate)
		}
		return checkRefill(limit)
	case ratelimit.TokenBucket:
		return checkRefill(limit)
	}
	return nil
}

// checkRefill returns an error wrapping ratelimit.ErrInvalidArgument when a drained bucket of
// limit would take longer than MaxWindow µs to refill: τ = Burst/Rate. The Redis scripts
// count time in tokens, and their clock (µs since 2020 plus τ, in tokens) then holds whole
// microseconds no longer; and a Result cannot say so long a wait on every backend alike.
func checkRefill(limit ratelimit.Limit) error {
	if !RefillOK(limit) {
		return fmt.Errorf("%w: burst/rate = %g s, the time a drained bucket takes to refill, is longer than 2^53 µs (285 years)",
			ErrInvalidLimit, float64(limit.Burst)/limit.Rate)
	}
	return nil
}

// LogWindow returns the window of a valid ratelimit.SlidingWindowLog limit, as Window does,
// after checking that its Burst is at most MaxLogBurst.
func LogWindow(limit ratelimit.Limit) (int64, error) {
	if limit.Burst > MaxLogBurst {
		return 0, fmt.Errorf("%w: burst %d is above the sliding window log's maximum of %d",
			ErrInvalidLimit, limit.Burst, MaxLogBurst)
	}
	return Window(limit)
}

// RefillOK reports whether a drained bucket of a valid limit refills within MaxWindow µs,
// the bound checkRefill enforces; small enough to be inlined on a backend's fast path.
func RefillOK(limit ratelimit.Limit) bool {
	// Burst·10⁶ ≤ MaxWindow·Rate, Burst/Rate in µs without the division: MaxWindow is a
	// power of two, so its product with Rate is exact.
	return float64(limit.Burst)*1e6 <= MaxWindow*limit.Rate
}

// CheckWarmup returns nil when limit has no warm-up, or one that algorithm a implements: an
// error wrapping ratelimit.ErrNotSupported for any algorithm but the token bucket, and one
// wrapping ratelimit.ErrInvalidArgument for a rate above MaxWarmupRate.
func CheckWarmup(a ratelimit.Algorithm, limit ratelimit.Limit) error {
	switch {
	case limit.Warmup == 0:
		return nil
	case a != ratelimit.TokenBucket:
		return fmt.Errorf("%w: a warm-up with %v: only the token bucket has one", ratelimit.ErrNotSupported, a)
	case limit.Rate > MaxWarmupRate:
		return fmt.Errorf("%w: rate %v is above the warm-up's maximum of %v per second",
			ErrInvalidLimit, limit.Rate, MaxWarmupRate)
	}
	return nil
}
