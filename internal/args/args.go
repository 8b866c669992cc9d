// Package args validates the arguments of a limiter call, so that every backend rejects the
// same inputs with the same errors, in the same order, before doing any work.
package args

import (
	"fmt"

	"github.com/sluice-go/ratelimit"
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
	if len(key) > ratelimit.MaxKeyLen {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrKeyTooLong, len(key), ratelimit.MaxKeyLen)
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
// under limit, with reserves r (ratelimit.Reserves.Tokens): 0 for ratelimit.Critical. When n
// is more than the part of the burst left to p, it returns an error wrapping
// ratelimit.ErrExceedsBurst, with Check's values and the reserve: such a request can never
// be allowed at its priority. Call it after Check.
func Reserve(r ratelimit.Reserves, p ratelimit.Priority, limit ratelimit.Limit, n int) (int, error) {
	if p == ratelimit.Critical {
		return 0, nil
	}
	reserve := r.Tokens(p, limit.Burst)
	if n > limit.Burst-reserve {
		return reserve, fmt.Errorf("%w: n = %d, burst %d less the %d tokens kept back from %v requests",
			ratelimit.ErrExceedsBurst, n, limit.Burst, reserve, p)
	}
	return reserve, nil
}
