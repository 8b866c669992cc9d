package distributed

import (
	"fmt"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

var _ ratelimit.LimitValidator = (*Limiter)(nil)

// ValidateLimit returns nil if the limiter accepts limit under the algorithm that would
// decide it (its own, or the limiter's default), or an error that says why not:
// limit.Validate's reasons, a rate above MaxRate and the algorithm's own bounds (a sliding
// log's Burst of 10,000, a window between 1 µs and 2⁵³ µs, a quota's time zone
// missing from the time zone database), wrapping
// ratelimit.ErrInvalidArgument, or ratelimit.ErrNotSupported for an algorithm this backend
// lacks or a warm-up on any algorithm but the token bucket.
func (l *Limiter) ValidateLimit(limit ratelimit.Limit) error {
	if err := l.checkSupported(limit); err != nil {
		return err
	}
	if err := limit.Validate(); err != nil {
		return err
	}
	return l.checkLimit(limit)
}

// checkSupported returns an error wrapping ratelimit.ErrNotSupported for a limit that names
// no algorithm on a limiter whose default this backend lacks.
func (l *Limiter) checkSupported(limit ratelimit.Limit) error {
	if _, ok := algorithms[l.algorithm]; !ok && limit.Algorithm == ratelimit.DefaultAlgorithm {
		return fmt.Errorf("%w: algorithm %v on the Redis backend", ratelimit.ErrNotSupported, l.algorithm)
	}
	return nil
}

// checkLimit is ValidateLimit for a limit that Limit.Validate and checkSupported have
// accepted: what this backend refuses beyond them.
func (l *Limiter) checkLimit(limit ratelimit.Limit) error {
	if limit.Rate > MaxRate {
		return fmt.Errorf("%w: rate %v is above the Redis backend's maximum of %v per second",
			args.ErrInvalidLimit, limit.Rate, MaxRate)
	}
	if limit.Algorithm == ratelimit.CalendarQuota {
		_, _, err := l.zones.Load(limit.Period.Zone)
		return err
	}
	return args.CheckAlgorithm(args.Resolve(limit, l.algorithm).Algorithm, limit)
}
