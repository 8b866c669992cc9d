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

// AIMD is an adaptive limit: additive increase, multiplicative decrease, as TCP finds a
// link's capacity. It is an algorithm apart from the limiter that counts the permits: a
// limiter keeps an AIMDState per key, asks Limit for the key's limit in force, and reports
// each permit's grant (Grant) and outcome (Sample). Each key has a limit of its own, which
// moves within [Min, max], max being the call's; it starts at Initial. The in-process
// limiter takes one (local.WithAdaptive, package
// [github.com/sluice-go/ratelimit/concurrency/local]).
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

// AIMDState is one key's adaptive limit under an AIMD. The zero value is a key not used
// yet. It is not safe for concurrent use: a limiter guards each key's state with the lock
// it counts the key's permits under, and calls Limit, Grant and Sample holding it.
type AIMDState struct {
	limit  int    // the limit before the call's max bounds it; 0 until the key's first use
	credit int    // successes counted toward the next increase
	epoch  uint64 // decreases so far; a permit granted in an older epoch cannot decrease
}

// AIMDGrant is what an AIMD remembers of one permit's grant, for Sample to judge its
// outcome. The zero AIMDGrant is a grant to an idle key before any decrease.
type AIMDGrant struct {
	epoch uint64 // s.epoch at the grant
	busy  bool   // the key used at least half its limit at the grant
}

// Limit returns the limit in force for the key of s under the call's max, ceiling: the
// key's own limit, within [min(Min, ceiling), ceiling].
func (a AIMD) Limit(s *AIMDState, ceiling int) int {
	if s.limit == 0 {
		s.limit = max(a.Initial, a.min())
	}
	return min(max(s.limit, min(a.min(), ceiling)), ceiling)
}

// Grant records that a permit of the key of s was granted, held being the key's permits
// held with this one, under ceiling, and returns what Sample needs to judge its outcome.
func (a AIMD) Grant(s *AIMDState, held, ceiling int) AIMDGrant {
	return AIMDGrant{epoch: s.epoch, busy: 2*held >= a.Limit(s, ceiling)}
}

// Sample updates s with the outcome o of the permit g names, held for d (from its grant to
// its release), under the call's max, ceiling.
func (a AIMD) Sample(s *AIMDState, g AIMDGrant, o Outcome, d time.Duration, ceiling int) {
	if o == Ignored {
		return
	}
	limit := a.Limit(s, ceiling)
	if o == Dropped || (a.Target > 0 && d > a.Target) {
		if g.epoch != s.epoch {
			return
		}
		backoff := a.Backoff
		if backoff == 0 {
			backoff = DefaultBackoff
		}
		s.limit = max(a.min(), int(math.Floor(float64(limit)*backoff)))
		s.credit = 0
		s.epoch++
		return
	}
	if !g.busy {
		return
	}
	s.credit++
	if s.epoch == 0 || s.credit >= limit {
		s.limit = min(limit+1, ceiling)
		s.credit = 0
	}
}

// min returns Min or its default, 1.
func (a AIMD) min() int { return max(a.Min, 1) }
