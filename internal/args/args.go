// Package args validates the arguments of a limiter call, so that every backend rejects the
// same inputs with the same errors, in the same order, before doing any work.
package args

import (
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// The wrappings of ratelimit.ErrInvalidArgument that say which argument is wrong, the same
// for every backend of this module (the root package's own for a Limit: Limit.Validate).
var (
	ErrKeyEmpty       error = invalid("ratelimit: empty key")
	ErrKeyTooLong     error = invalid("ratelimit: key too long")
	ErrInvalidLimit   error = invalid("ratelimit: invalid limit")
	ErrInvalidCost    error = invalid("ratelimit: invalid cost")
	ErrInvalidRequest error = invalid("ratelimit: invalid request list")
)

// The bounds of a call's arguments, the same on every backend; the root package documents
// them in words (Limit, ErrInvalidArgument, SlidingWindowLog) and checks the first two
// itself (Limit.Validate), as TestBounds pins.
const (
	// MaxBurst is the largest Burst a Limit may have: 2^52, so that a count of tokens plus
	// a cost stays an exact integer in a Redis script, whose numbers are float64.
	MaxBurst = 1 << 52
	// MaxWarmup is the longest Warmup a Limit may have: 2^53 µs, about 285 years, the
	// longest span of microseconds a Redis script counts exactly, and the longest window of
	// every algorithm.
	MaxWarmup = (1 << 53) * time.Microsecond
	// MaxKeyLen is the longest key, in bytes, a limiter accepts (ErrKeyTooLong beyond): it
	// bounds what one bucket costs, in memory or in Redis, however a key is built. The key
	// functions of this module never build a longer one.
	MaxKeyLen = 512
	// MaxLogBurst is the largest Burst that SlidingWindowLog accepts: its log holds one
	// entry per admitted token of the last window (a sorted-set member of up to about 130
	// bytes in Redis: 1.3 MB at the maximum).
	MaxLogBurst = 10_000
)

// invalid is a ratelimit.ErrInvalidArgument that names the argument in its own words.
type invalid string

func (e invalid) Error() string      { return string(e) }
func (invalid) Is(target error) bool { return target == ratelimit.ErrInvalidArgument }

// Check returns nil when key, limit and n make a valid AllowN call, or else the first error
// of: ErrKeyEmpty, ErrKeyTooLong, the limit's (Limit.Validate), ErrInvalidCost (n < 1),
// ratelimit.ErrExceedsBurst (n > limit.Burst), the last four wrapped with the offending
// values.
func Check(key string, limit ratelimit.Limit, n int) error {
	if key == "" {
		return ErrKeyEmpty
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrKeyTooLong, len(key), MaxKeyLen)
	}
	if err := limit.Validate(); err != nil {
		return err
	}
	if n < 1 {
		return fmt.Errorf("%w: n = %d", ErrInvalidCost, n)
	}
	if n > limit.Burst {
		return fmt.Errorf("%w: n = %d, burst %d", ratelimit.ErrExceedsBurst, n, limit.Burst)
	}
	return nil
}

// Reserve returns the tokens a request of priority p for n tokens must leave in its bucket
// under limit, with reserves r (priority.Reserves.Tokens): 0 for priority.Critical. When n
// is more than the part of the burst left to p, it returns an error wrapping
// ratelimit.ErrExceedsBurst, with Check's values and the reserve: such a request can never
// be allowed at its priority. Call it after Check.
func Reserve(r priority.Reserves, p priority.Level, limit ratelimit.Limit, n int) (int, error) {
	if p == priority.Critical {
		return 0, nil
	}
	reserve := r.Tokens(p, limit.Burst)
	if n > limit.Burst-reserve {
		return reserve, fmt.Errorf("%w: n = %d, burst %d less the %d tokens kept back from %v requests",
			ratelimit.ErrExceedsBurst, n, limit.Burst, reserve, p)
	}
	return reserve, nil
}
