// Package priority says how much a request matters when its bucket runs low: the
// criticality levels of the Google SRE book. A request of a lower priority is admitted only
// while the bucket keeps a reserve of tokens (Reserves) for the higher ones, so that a flood
// of sheddable work (statistics, prefetches) cannot spend the tokens logins and payments
// need.
//
// The level travels in the request's context (With, From), so that the ratelimit.Limiter
// interface stays as it is and every limiter that wraps another (fallback, observe.Wrap)
// passes it on untouched. A request that carries none is Critical: without priorities,
// every request may take the bucket to empty, as it always could. The backends take
// Reserves as an option (local.WithReserves, distributed.WithReserves); the middleware sets
// the level of each request (WithPriorityFunc, or a policy's priority).
package priority

import (
	"context"
	"fmt"
	"math"

	"github.com/sluice-go/ratelimit"
)

// Level is a request's priority: Critical, Normal or Sheddable.
type Level int8

const (
	// Critical requests may take the bucket to empty. It is the zero value and the priority
	// of a context that carries none.
	Critical Level = iota
	// Normal requests are admitted while the bucket keeps Reserves.Normal of its Burst back.
	Normal
	// Sheddable requests are admitted while the bucket keeps Reserves.Sheddable of its Burst
	// back: they are the first to be turned away.
	Sheddable
)

// String returns "critical", "normal" or "sheddable", the values of the ratelimit.priority
// metric attribute, and "unknown" for any other value.
func (p Level) String() string {
	switch p {
	case Critical:
		return "critical"
	case Normal:
		return "normal"
	case Sheddable:
		return "sheddable"
	}
	return "unknown"
}

// clamp maps a value out of range to the nearest priority: below Critical is Critical,
// above Sheddable is Sheddable.
func (p Level) clamp() Level {
	return min(max(p, Critical), Sheddable)
}

// priorityKey is the context key of a request's priority. It has no size, so that storing
// it in an interface allocates nothing.
type priorityKey struct{}

// With returns a context carrying p, for the limiter that decides the request made
// with it. A value below Critical is taken as Critical, one above Sheddable as Sheddable.
// When ctx already carries p (a context that carries none carries Critical), With
// returns ctx itself, so that marking a request Critical costs nothing. A nil ctx is taken
// as context.Background().
func With(ctx context.Context, p Level) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	p = p.clamp()
	if From(ctx) == p {
		return ctx
	}
	return context.WithValue(ctx, priorityKey{}, p)
}

// From returns the priority ctx carries: Critical when it carries none, or when ctx
// is nil.
func From(ctx context.Context) Level {
	if ctx == nil {
		return Critical
	}
	p, _ := ctx.Value(priorityKey{}).(Level)
	return p
}

// The default reserves: the fractions of a bucket's Burst that requests of a priority may
// not take, and that are kept for the priorities above it.
const (
	// defaultNormalReserve keeps a tenth of the burst back from Normal requests.
	defaultNormalReserve = 0.1
	// defaultSheddableReserve keeps half of the burst back from Sheddable requests.
	defaultSheddableReserve = 0.5
)

// Reserves are the parts of each bucket kept back from the lower priorities, as fractions
// of its Burst: a request of priority p for n tokens is decided as AllowN would decide it
// on a bucket whose Burst were Burst − Tokens(p, Burst), while the bucket itself (its
// refill, its key, its expiry) stays the one of the real Burst. Critical requests have no
// reserve. Limiters take Reserves as an option (local.WithReserves,
// distributed.WithReserves).
//
// A zero field means its default (0.1 for Normal, 0.5 for Sheddable); a negative one turns
// that reserve off; so the zero Reserves are the defaults. Each fraction must be below 1,
// and Sheddable's at least Normal's (see Validate).
type Reserves struct {
	// Normal is the fraction of the burst kept back from Normal requests. Default: 0.1.
	Normal float64
	// Sheddable is the fraction of the burst kept back from Sheddable requests. Default: 0.5.
	Sheddable float64
}

// fractions returns the fractions r stands for, defaults filled in and reserves turned off
// (negative) as 0. NaN is returned as it is, for Validate to refuse.
func (r Reserves) fractions() (normal, sheddable float64) {
	return fraction(r.Normal, defaultNormalReserve), fraction(r.Sheddable, defaultSheddableReserve)
}

func fraction(f, def float64) float64 {
	switch {
	case f == 0:
		return def
	case f < 0:
		return 0
	}
	return f
}

// Validate returns nil if r can be enforced, or an error wrapping
// ratelimit.ErrInvalidArgument that says which reserve is wrong: a fraction that is NaN or
// not below 1 (a priority that could never take a token), or a Sheddable reserve smaller than
// the Normal one (the lower priority would be admitted where the higher one is not),
// defaults counted.
func (r Reserves) Validate() error {
	normal, sheddable := r.fractions()
	for _, f := range [...]struct {
		name  string
		value float64
	}{{"Normal", normal}, {"Sheddable", sheddable}} {
		if math.IsNaN(f.value) || f.value >= 1 {
			return fmt.Errorf("%w: reserve %s = %v is not a fraction below 1", errInvalidReserves, f.name, f.value)
		}
	}
	if sheddable < normal {
		return fmt.Errorf("%w: reserve Sheddable = %v is less than reserve Normal = %v: a lower priority must keep back at least as much",
			errInvalidReserves, sheddable, normal)
	}
	return nil
}

// errInvalidReserves is the ratelimit.ErrInvalidArgument of Reserves that cannot be
// enforced.
var errInvalidReserves error = invalidArgument("ratelimit: invalid reserves")

// invalidArgument is a ratelimit.ErrInvalidArgument in its own words.
type invalidArgument string

func (e invalidArgument) Error() string      { return string(e) }
func (invalidArgument) Is(target error) bool { return target == ratelimit.ErrInvalidArgument }

// Tokens returns how many tokens of a bucket of burst tokens are kept back from requests
// of priority p: ⌊fraction × burst⌋, 0 for Critical and for a reserve turned off. Requests
// of priority p can take the bucket down to that many tokens, and no further; their largest
// request is burst − Tokens(p, burst) tokens. Every backend computes reserves with Tokens,
// so that they agree to the token.
//
// With the defaults and a burst of 10, Normal requests keep 1 token back and Sheddable ones
// 5; with a burst of 1 neither keeps anything back. A priority out of range counts as the
// nearest one (see With). Tokens never returns more than burst − 1, so that every
// priority can take at least one token from a full bucket, even with Reserves that Validate
// refuses; it returns 0 when burst is below 1.
func (r Reserves) Tokens(p Level, burst int) int {
	var f float64
	switch p.clamp() {
	case Critical:
		return 0
	case Normal:
		f = fraction(r.Normal, defaultNormalReserve)
	default:
		f = fraction(r.Sheddable, defaultSheddableReserve)
	}
	if !(f > 0) || burst < 1 {
		return 0
	}
	// For f below 1 the product f·burst, rounded, stays below burst (it falls short by at
	// least half a unit in the last place, which rounding to nearest never crosses), so its
	// floor is at most burst − 1 already: the cap only holds back what Validate refuses.
	return int(min(math.Floor(f*float64(burst)), float64(burst-1)))
}
