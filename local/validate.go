package local

import (
	"fmt"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

var _ ratelimit.LimitValidator = (*Limiter)(nil)

// ValidateLimit returns nil if the algorithm that would decide limit (its own, or the
// limiter's default) accepts it, or an error wrapping
// ratelimit.ErrInvalidArgument that says why not: limit.Validate's reasons, a token bucket that
// refills in less than 1 µs (see checkResolution), and the algorithm's own bounds (a sliding
// log's Burst of 10,000, a window between 1 µs and 2⁵³ µs, a shaper's rate of at most
// 10⁶ a second, as a warm-up's); or one wrapping ratelimit.ErrNotSupported for a warm-up on
// any algorithm but the token bucket, or for a limit that names no algorithm on a limiter
// whose default this backend lacks. A quota's time zone must be in the time zone database.
func (l *Limiter) ValidateLimit(limit ratelimit.Limit) error {
	if limit.Algorithm == ratelimit.DefaultAlgorithm && !l.supported {
		return fmt.Errorf("%w: algorithm %v on the local backend", ratelimit.ErrNotSupported, l.algorithm)
	}
	if err := limit.Validate(); err != nil {
		return err
	}
	if limit.Algorithm == ratelimit.CalendarQuota {
		_, _, err := l.store.zones.Load(limit.Period.Zone)
		return err
	}
	return checkAlgorithm(args.Resolve(limit, l.algorithm))
}

// checkAlgorithm is args.CheckAlgorithm for a limit whose algorithm is named, and
// checkResolution for a token bucket.
func checkAlgorithm(limit ratelimit.Limit) error {
	if err := args.CheckAlgorithm(limit.Algorithm, limit); err != nil || limit.Algorithm != ratelimit.TokenBucket {
		return err
	}
	return checkResolution(limit)
}

// resolutionOK reports whether a drained bucket of a valid limit takes at least 1 µs to
// refill: Burst/Rate ≥ 1 µs, tested without the division. The limiter reads its clock in
// whole microseconds, so a bucket that refills faster is full again at every reading and
// admits Burst per microsecond, less than Rate: at math.MaxFloat64 (x/time/rate's Inf) and
// Burst 1, one request in a microsecond instead of all of them. Every window algorithm
// already refuses such a limit (its window is Burst/Rate), a shaper or a warm-up any rate
// above 10⁶; and so does the Redis backend, whose MaxRate is 10⁶.
func resolutionOK(limit ratelimit.Limit) bool {
	return limit.Rate <= float64(limit.Burst)*1e6
}

// checkResolution returns an error wrapping ratelimit.ErrInvalidArgument when resolutionOK does
// not hold.
func checkResolution(limit ratelimit.Limit) error {
	if !resolutionOK(limit) {
		return fmt.Errorf("%w: burst/rate = %g s, the time a drained bucket takes to refill, is shorter than 1 µs, the clock's resolution: it would admit %d per µs, not %v per second; raise the burst to at least rate/10⁶",
			args.ErrInvalidLimit, float64(limit.Burst)/limit.Rate, limit.Burst, limit.Rate)
	}
	return nil
}
