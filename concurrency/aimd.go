package concurrency

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults of AIMD's fields.
const (
	// DefaultBackoff is the factor a drop multiplies the limit by.
	DefaultBackoff = 0.9
)

// AIMD is an adaptive limit, given to WithAdaptive: additive increase, multiplicative
// decrease, as TCP finds a link's capacity. Each key has a limit of its own, which moves
// within [Min, max], max being the call's; it starts at Initial.
//
//   - A permit released with Dropped, or with Succeeded after more than Target, is a drop:
//     the limit is multiplied by Backoff, rounded down, and no lower than Min. Only one drop
//     counts per permits granted under the same limit: the permits granted before a
//     decrease, still running when it happens, do not decrease it again (their latency was
//     caused by the old limit).
//   - A permit released with Succeeded within Target, when the key was at least half using
//     its limit as it was granted, counts toward an increase. Until the key's first drop,
//     each such permit adds 1 (slow start: the limit doubles in the time a permit is held);
//     after it, every limit-many such permits add 1 (about 1 per time a permit is held).
//   - Ignored outcomes, and permits released while the key was using less than half its
//     limit, change nothing: an idle key does not grow a limit it has not tested.
//
// The zero AIMD is usable: Min 1, Initial Min, Backoff DefaultBackoff, no latency target.
type AIMD struct {
	// Min is the lowest the limit goes. Default: 1, which zero also means. A call whose max
	// is lower than Min is held to its max.
	Min int
	// Initial is a new key's limit. Default: Min, which zero also means.
	Initial int
	// Target is the latency above which a succeeded permit counts as a drop: the time it
	// was held, from its grant (not from the call to Acquire, so time queued is not counted)
	// to its release. Default: none (zero): only Dropped outcomes decrease the limit.
	Target time.Duration
	// Backoff multiplies the limit on a drop, in (0, 1). Default: DefaultBackoff (0.9),
	// which zero also means.
	Backoff float64
}

// Validate returns an error when a field is out of range: a negative Min, Initial or
// Target, Initial below Min, or a Backoff that is not zero and not in (0, 1).
func (a AIMD) Validate() error {
	switch {
	case a.Min < 0:
		return fmt.Errorf("concurrency: AIMD.Min %d is negative", a.Min)
	case a.Initial < 0:
		return fmt.Errorf("concurrency: AIMD.Initial %d is negative", a.Initial)
	case a.Initial != 0 && a.Initial < a.Min:
		return fmt.Errorf("concurrency: AIMD.Initial %d is below Min %d", a.Initial, a.Min)
	case a.Target < 0:
		return fmt.Errorf("concurrency: AIMD.Target %v is negative", a.Target)
	case a.Backoff != 0 && !(a.Backoff > 0 && a.Backoff < 1):
		return errors.New("concurrency: AIMD.Backoff must be in (0, 1)")
	}
	return nil
}

// withDefaults returns a with its zero fields set to their defaults.
func (a AIMD) withDefaults() AIMD {
	if a.Min == 0 {
		a.Min = 1
	}
	if a.Initial == 0 {
		a.Initial = a.Min
	}
	if a.Backoff == 0 {
		a.Backoff = DefaultBackoff
	}
	return a
}

// adaptive is a key's adaptive state, guarded by its shard's mutex.
type adaptive struct {
	limit  int    // the limit before the call's max bounds it; 0 until the key's first use
	credit int    // successes counted toward the next increase
	epoch  uint64 // decreases so far; a permit granted in an older epoch cannot decrease
}

// bound returns the key's limit under the call's max, ceiling: its own within
// [min(Min, ceiling), ceiling].
func (a *AIMD) bound(s *adaptive, ceiling int) int {
	if s.limit == 0 {
		s.limit = a.Initial
	}
	return clamp(s.limit, min(a.Min, ceiling), ceiling)
}

// sample updates s with one permit's outcome. busy reports whether the key was at least
// half using its limit when the permit was granted, epoch is s.epoch then, held the time the
// permit was held, ceiling the call's max.
func (a *AIMD) sample(s *adaptive, o Outcome, busy bool, epoch uint64, held time.Duration, ceiling int) {
	if o == Ignored {
		return
	}
	limit := a.bound(s, ceiling)
	if o == Dropped || (a.Target > 0 && held > a.Target) {
		if epoch != s.epoch {
			return
		}
		s.limit = max(a.Min, int(math.Floor(float64(limit)*a.Backoff)))
		s.credit = 0
		s.epoch++
		return
	}
	if !busy {
		return
	}
	s.credit++
	if s.epoch == 0 || s.credit >= limit {
		s.limit = min(limit+1, ceiling)
		s.credit = 0
	}
}

func clamp(v, lo, hi int) int { return min(max(v, lo), hi) }
