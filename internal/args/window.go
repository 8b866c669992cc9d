package args

import (
	"fmt"
	"math"

	"github.com/sluice-go/ratelimit"
)

// MaxWindow is the longest window Burst/Rate any algorithm accepts, in microseconds: 2^53,
// about 285 years, the largest count of microseconds a Redis script (whose numbers are
// float64) holds exactly.
const MaxWindow = 1 << 53

// Window returns the window W = Burst/Rate of a valid limit in whole microseconds, rounded to
// the nearest, which the window algorithms (FixedWindow, SlidingWindowLog,
// SlidingWindowCounter) use on every backend, so that they agree to the microsecond. It
// returns an error wrapping ratelimit.ErrInvalidArgument when W is shorter than 1 µs or longer
// than MaxWindow.
func Window(limit ratelimit.Limit) (int64, error) {
	w := math.Round(float64(limit.Burst) * 1e6 / limit.Rate)
	if w < 1 || w > MaxWindow {
		return 0, fmt.Errorf("%w: the window burst/rate = %g s is not between 1 µs and 2^53 µs (285 years)",
			ErrInvalidLimit, float64(limit.Burst)/limit.Rate)
	}
	return int64(w), nil
}
