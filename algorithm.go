package ratelimit

import "strconv"

// Algorithm selects how a backend decides. A limiter has a default, set by an option of its
// constructor (local.WithAlgorithm, distributed.WithAlgorithm), and a Limit may name its own
// (Limit.Algorithm), so that one limiter serves limits of different algorithms. One Limit
// means the same on every algorithm: Burst requests per window of W = Burst/Rate seconds,
// so PerMinute(100) is 100 requests a minute whichever algorithm enforces it. How tightly a
// window holds differs: the sliding log admits at most Burst in any interval of length W;
// the token bucket and the leaky bucket at most Burst + Rate·d in any interval of length d
// (up to 2·Burst within one W, after a quiet spell); the fixed window at most Burst per
// aligned window (so 2·Burst across a boundary); the sliding counter at most Burst by its
// weighted estimate of the last W.
//
// The zero Algorithm is DefaultAlgorithm, so that the zero value of a Limit's field, or of
// an option, means "the default" as everywhere in this module.
//
// A backend built with an algorithm it does not implement answers ErrNotSupported for every
// limit that names none; a Limit naming an algorithm the backend lacks, likewise.
type Algorithm int

const (
	// DefaultAlgorithm names no algorithm: in a Limit, the algorithm of the limiter that
	// decides it; in local.WithAlgorithm and distributed.WithAlgorithm, TokenBucket. A limit
	// that leaves its algorithm to the default and the same limit naming the limiter's
	// default are one bucket: they are one policy.
	DefaultAlgorithm Algorithm = iota
	// TokenBucket refills Rate tokens per second up to Burst and admits a request when the
	// bucket holds enough tokens. It is the limiters' default, and equivalent to GCRA: the
	// local backend decides as golang.org/x/time/rate does, the Redis backend stores a
	// theoretical arrival time.
	TokenBucket
	// FixedWindow admits at most Burst requests per window of length W aligned to the Unix
	// epoch, so that every instance agrees on where windows start.
	FixedWindow
	// SlidingWindowLog admits at most Burst requests in any interval of length W, exactly,
	// by remembering the time of each admitted request (O(Burst) state per key). Its Burst
	// is at most 10,000: the log holds one entry per admitted token of the last window, so
	// a busy bucket costs 8 bytes per unit of Burst in process and up to about 130 in Redis,
	// and a request of cost n adds n entries (about 2.5 µs of Redis time each). A backend
	// refuses a larger Burst with an error wrapping ErrInvalidArgument; use
	// SlidingWindowCounter for it.
	SlidingWindowLog
	// SlidingWindowCounter approximates SlidingWindowLog with two fixed windows weighted by
	// their overlap with the sliding one (O(1) state per key).
	SlidingWindowCounter
	// LeakyBucket shapes traffic: a queue of Burst requests drained at Rate. An allowed
	// request carries a Result.Delay to wait before proceeding.
	LeakyBucket
	// CalendarQuota admits at most Burst per calendar period (Limit.Period): a day, an ISO
	// week or a month, or several, in a time zone, from local midnight to local midnight.
	// Its Rate is zero. It is named by its limits only: a limiter's default must have no
	// period of its own.
	CalendarQuota
)

// String returns the algorithm's name, such as "TokenBucket", or "DefaultAlgorithm".
func (a Algorithm) String() string {
	switch a {
	case DefaultAlgorithm:
		return "DefaultAlgorithm"
	case TokenBucket:
		return "TokenBucket"
	case FixedWindow:
		return "FixedWindow"
	case SlidingWindowLog:
		return "SlidingWindowLog"
	case SlidingWindowCounter:
		return "SlidingWindowCounter"
	case LeakyBucket:
		return "LeakyBucket"
	case CalendarQuota:
		return "CalendarQuota"
	}
	return "Algorithm(" + strconv.Itoa(int(a)) + ")"
}

// known reports whether a is DefaultAlgorithm or one of the algorithms above.
func (a Algorithm) known() bool { return a >= DefaultAlgorithm && a <= CalendarQuota }
