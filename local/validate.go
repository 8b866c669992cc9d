package local

import (
	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

var _ ratelimit.LimitValidator = (*Limiter)(nil)

// ValidateLimit returns nil if the limiter's algorithm accepts limit, or an error wrapping
// ratelimit.ErrInvalidLimit that says why not: limit.Validate's reasons, and the
// algorithm's own bounds (a sliding log's ratelimit.MaxLogBurst, a window between 1 µs and
// 2⁵³ µs, a shaper's rate of at most 10⁶ a second, as a warm-up's); or one wrapping
// ratelimit.ErrNotSupported for a warm-up on any algorithm but the token bucket.
func (l *Limiter) ValidateLimit(limit ratelimit.Limit) error {
	if err := limit.Validate(); err != nil {
		return err
	}
	return args.CheckAlgorithm(l.algorithm, limit)
}
