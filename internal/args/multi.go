package args

import (
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
)

// CheckAll checks the requests of an AllowAll before any work, as ratelimit.MultiLimiter
// says: the list must not be empty, and each entry without the zero Limit must pass check
// (the backend's own check of an AllowN of max(N, 1) tokens), have no warm-up
// (ratelimit.ErrNotSupported), have N ≥ 0 and not repeat the
// bucket of an entry before it: its key and its limit, whose algorithm is def, the limiter's
// default, when it names none (see Resolve). It returns the index of the first bad entry and
// an error naming it by index and Name, never by key, prefixed by pkg ("local: AllowAll");
// or -1 and nil. check(i) checks reqs[i].
func CheckAll(pkg string, reqs []ratelimit.Request, def ratelimit.Algorithm, check func(i int) error) (int, error) {
	if len(reqs) == 0 {
		return -1, fmt.Errorf("%s: %w: no requests", pkg, ErrInvalidRequest)
	}
	for i := range reqs {
		r := &reqs[i]
		if r.Limit == (ratelimit.Limit{}) {
			continue
		}
		err := check(i)
		if err == nil && r.Limit.Warmup != 0 {
			// A cold bucket must record that its warm-up began even when it denies, or a
			// request for more than it holds cold would never pass; an all-or-nothing
			// decision that denies writes nothing.
			err = fmt.Errorf("%w: AllowAll of a limit with a warm-up", ratelimit.ErrNotSupported)
		}
		if err == nil && r.N < 0 {
			err = fmt.Errorf("%w: n = %d", ErrInvalidCost, r.N)
		}
		if err == nil && repeats(reqs[:i], r, def) {
			err = fmt.Errorf("%w: the same key and limit twice", ErrInvalidRequest)
		}
		if err != nil {
			return i, fmt.Errorf("%s: request %d (%q): %w", pkg, i, r.Name, err)
		}
	}
	return -1, nil
}

// repeats reports whether r names the bucket of one of reqs, on a limiter whose default
// algorithm is def.
func repeats(reqs []ratelimit.Request, r *ratelimit.Request, def ratelimit.Algorithm) bool {
	limit := Resolve(r.Limit, def)
	for i := range reqs {
		if other := Resolve(reqs[i].Limit, def); reqs[i].Key == r.Key && (other == limit || SameKeep(other, limit)) {
			return true
		}
	}
	return false
}

// Bind sets mr's Binding from its Results, as ratelimit.MultiResult says:
// denied, the entry with the longest RetryAfter; allowed, the one with the fewest Remaining;
// ties, the first; an entry with the zero Limit never, unless every entry has it.
func Bind(mr *ratelimit.MultiResult, reqs []ratelimit.Request) {
	mr.Binding = -1
	var retry time.Duration
	for i := range mr.Results {
		res := &mr.Results[i]
		if reqs[i].Limit == (ratelimit.Limit{}) {
			continue
		}
		switch {
		case mr.Binding < 0,
			!mr.Allowed && res.RetryAfter > retry,
			mr.Allowed && res.Remaining < mr.Results[mr.Binding].Remaining:
			mr.Binding = i
			if !mr.Allowed {
				retry = res.RetryAfter
			}
		}
	}
	mr.Binding = max(mr.Binding, 0)
}
