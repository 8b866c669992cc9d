package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Limit is a rate limit: Rate tokens are added per second, up to Burst tokens, the capacity of
// the bucket. A full bucket admits Burst requests at once; after that, one request per 1/Rate
// seconds. The zero Limit is not a valid limit; middleware reads it as "do not limit this
// request", as it reads Unlimited, which says so on purpose.
//
// Limit is comparable, and every field is part of a bucket's identity: the same key under a
// Limit that differs in any field is another bucket, with two exceptions: a Limit whose
// Algorithm is DefaultAlgorithm and the same Limit naming the limiter's default algorithm
// are one bucket, since they are one policy; and a Limit with KeepUsage is one bucket with
// every other KeepUsage Limit of the key and algorithm (see KeepUsage).
type Limit struct {
	// Rate is the refill rate in tokens per second. It must be finite and greater than zero.
	Rate float64
	// Burst is the capacity of the bucket in tokens. It must be at least 1.
	Burst int
	// Warmup, when not zero, is the warm-up period of a token bucket: a bucket that is new, or
	// has rested long enough to be full again and then some, starts cold, refilling at a third of
	// Rate with a third of Burst available, and ramps linearly up to Rate and Burst over Warmup.
	// It only ever admits less than the same bucket without a warm-up would. Zero, the default,
	// means no warm-up. It must be a whole number of microseconds, at most 2^53 µs. Only
	// ratelimit.TokenBucket implements it: the other algorithms refuse a limit with a warm-up
	// with an error wrapping ErrNotSupported.
	// https://github.com/sluice-go/ratelimit/blob/main/docs/algorithms.md has the formulas.
	Warmup time.Duration
	// Algorithm is the algorithm that enforces the limit. Zero, DefaultAlgorithm, leaves it
	// to the limiter (local.WithAlgorithm, distributed.WithAlgorithm, whose own default is
	// TokenBucket), so that a policy written once runs on any limiter; naming one lets a
	// single limiter (one Redis, one fallback stack) serve policies of different algorithms.
	// A value that is not one of the Algorithm constants is refused by Validate.
	Algorithm Algorithm
	// Period is the calendar period of a CalendarQuota, whose Burst is the quota: at most
	// Burst per period (see Quota). It must be the zero Period for every other algorithm.
	Period Period
	// KeepUsage makes the bucket's identity its key and its algorithm, not its numbers:
	// when the Rate or Burst a key is decided under changes, the usage already spent
	// carries over to the new numbers instead of a fresh bucket starting full. A token or
	// leaky bucket keeps the tokens it is missing (a higher Burst gives the difference at
	// once, a lower one admits nothing until the bucket has refilled to within it, the time
	// since its last write refilled at the Rate of that write); a fixed window or sliding
	// counter keeps its counts while its window, Burst/Rate, stays the same length (a new
	// length is a new bucket); a sliding log keeps its log; a calendar quota keeps its
	// period's count (a new Period is a new bucket). A change of algorithm is a new
	// bucket. Both backends carry usage with the same arithmetic. A Warmup is not supported
	// with KeepUsage (ErrNotSupported), nor a token bucket above 10⁶ tokens a second
	// (ErrInvalidArgument). False, the default, keeps (key, limit) the identity,
	// so that two limits on one key (AllowAll) are two buckets. Package rules sets it on the
	// limits of its named policies, so that a reload resets nobody.
	// https://github.com/sluice-go/ratelimit/blob/main/docs/rules.md has the details.
	KeepUsage bool
}

// PerSecond returns a limit of n requests per second with a burst of n.
func PerSecond(n int) Limit { return Limit{Rate: float64(n), Burst: n} }

// PerMinute returns a limit of n requests per minute with a burst of n.
func PerMinute(n int) Limit { return Limit{Rate: float64(n) / 60, Burst: n} }

// PerHour returns a limit of n requests per hour with a burst of n.
func PerHour(n int) Limit { return Limit{Rate: float64(n) / 3600, Burst: n} }

// Validate returns nil if l can be enforced, or an error wrapping ErrInvalidArgument that says
// which field is wrong: a Rate that is not finite and greater than zero, a Burst out of
// [1, 2^52], a Warmup out of bounds, or an Algorithm that is none of the constants; for
// a CalendarQuota, a Rate or Warmup that is not zero, a Period out of bounds, or a zone the
// time zone database lacks.
// Whether a backend implements the algorithm, and its bounds for it, is the backend's to say
// (LimitValidator).
func (l Limit) Validate() error {
	if l.Algorithm == CalendarQuota || l.Period != (Period{}) {
		return l.validateQuota()
	}
	if math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) || l.Rate <= 0 {
		return fmt.Errorf("%w: rate %v is not a finite number greater than zero", errInvalidLimit, l.Rate)
	}
	if l.Burst < 1 {
		return fmt.Errorf("%w: burst %d is less than 1", errInvalidLimit, l.Burst)
	}
	if l.Burst > maxBurst {
		return fmt.Errorf("%w: burst %d is more than 2^52", errInvalidLimit, l.Burst)
	}
	if l.Warmup < 0 || l.Warmup > maxWarmup || l.Warmup%time.Microsecond != 0 {
		return fmt.Errorf("%w: warm-up %v is not a whole number of microseconds between 0 and 2^53 µs",
			errInvalidLimit, l.Warmup)
	}
	if !l.Algorithm.known() {
		// Not ErrNotSupported, which says that a backend lacks an algorithm: this value
		// names none, and no backend could ever enforce it.
		return fmt.Errorf("%w: %v is not one of the ratelimit package's algorithms", errInvalidLimit, l.Algorithm)
	}
	return nil
}

// maxWarmup is the longest Warmup a Limit may have: 2^53 µs, about 285 years, the longest
// span of microseconds a Redis script (whose numbers are float64) counts exactly, and the
// longest window of every algorithm.
const maxWarmup = (1 << 53) * time.Microsecond

// maxBurst is the largest Burst a Limit may have, on every backend: 2^52, so that a count of
// tokens plus a cost stays an exact integer in a Redis script, whose numbers are float64.
const maxBurst = 1 << 52

// Unlimited is the limit of a request that is not to be limited, said on purpose: a limit
// function (a middleware's WithLimitFunc, WithLimits) returns it for the requests it
// exempts, and a table of limits (WithRouteLimits, WithMethodLimits) may give it to a route
// or as the default. Middleware lets such a request through without asking the limiter.
// The zero Limit means the same to middleware but is also what a setting never set gives
// (PerSecond(0)): a limit function that returns it is reported, once, to the error handler,
// and a fixed limit of zero is refused. Unlimited is not a limit a limiter decides: its
// Rate is +Inf, which Validate refuses; it is written "unlimited".
var Unlimited = Limit{Rate: math.Inf(1)}

// Result is the outcome of one decision.
type Result struct {
	// Allowed reports whether the request may proceed.
	Allowed bool
	// Limit is the limit the decision was made under.
	Limit Limit
	// Remaining is the number of whole tokens left in the bucket after this decision, between
	// 0 and Limit.Burst.
	Remaining int
	// RetryAfter is, when the request was denied, how long until the same request would be
	// allowed if nothing else used the bucket. It is zero exactly when Allowed is true.
	RetryAfter time.Duration
	// ResetAfter is how long until the bucket is full again if nothing else uses it.
	ResetAfter time.Duration
	// Delay is, when a shaping algorithm (LeakyBucket) allowed the request, how long to hold
	// it before it proceeds. It is zero for every policing algorithm.
	Delay time.Duration
	// Charge is, when the request was allowed, what it took its tokens from: pass it to
	// Inspector.Refund to give them back there. It is zero on a denial, and on Peek.
	Charge Charge
}

// Charge identifies what an allowing decision took its tokens from, so that a refund gives
// them back there and nowhere else (see Inspector.Refund). The zero Charge names nothing:
// a refund with it goes to the bucket's current state.
type Charge struct {
	// At is the instant of the decision on the clock of the backend that made it (Redis's
	// clock on the Redis backend), to the microsecond. Zero when nothing was taken.
	At time.Time
	// Part says which part of a limiter made of several (package fallback's) decided. It is
	// opaque to callers, and empty for a single backend.
	Part string
}

// Limiter decides whether requests identified by a key may proceed under a limit. Each
// (key, limit) pair names one bucket: calling with a new limit for the same key starts a
// fresh, full bucket, unless both limits have KeepUsage (see Limit.KeepUsage).
//
// Being limited is not an error: a denial is a Result with Allowed false and a nil error. A
// non-nil error means the limiter could not decide (bad input, backend down, closed); the
// Result then has Allowed false and only its Limit field set.
//
// Implementations are safe for concurrent use.
type Limiter interface {
	// Allow is AllowN with n = 1.
	Allow(ctx context.Context, key string, limit Limit) (Result, error)
	// AllowN takes n tokens from the bucket if it holds at least n, and denies the request
	// otherwise. A denial takes nothing. n greater than limit.Burst can never be allowed:
	// AllowN returns Allowed false and ErrExceedsBurst. A limiter that keeps
	// priority.Reserves decides a request whose context carries a priority below Critical
	// as under a Burst less its reserve.
	AllowN(ctx context.Context, key string, limit Limit, n int) (Result, error)
	// Wait blocks until one token can be taken, then takes it. It returns ctx's error
	// promptly when ctx ends, and fails at once, with an error wrapping
	// context.DeadlineExceeded, when ctx's deadline comes before the token would. Backends
	// that cannot wait return ErrNotSupported.
	Wait(ctx context.Context, key string, limit Limit) error
	// Close releases the limiter's resources. Every call after Close returns ErrClosed; a
	// second Close returns nil.
	Close() error
}

// errInvalidLimit is the ErrInvalidArgument of a limit that cannot be enforced.
var errInvalidLimit error = invalidArgument("ratelimit: invalid limit")

// invalidArgument is an ErrInvalidArgument that names the argument in its own words.
type invalidArgument string

func (e invalidArgument) Error() string      { return string(e) }
func (invalidArgument) Is(target error) bool { return target == ErrInvalidArgument }

// Errors returned by limiters, possibly wrapped: test them with errors.Is.
var (
	// ErrInvalidArgument is returned for a call the limiter can never answer as it is asked,
	// wrapped by an error that says which argument: an empty key, a key longer than 512
	// bytes (which bounds what one bucket costs, however a key is built), a limit whose Rate
	// is not finite and greater than zero, whose Burst is less than 1, or that
	// Limit.Validate or a backend refuses otherwise, a cost n below 1, a list of requests
	// AllowAll cannot decide as a whole (empty, or the same key and limit twice), a Charge
	// that names no part of the limiter.
	ErrInvalidArgument = errors.New("ratelimit: invalid argument")
	// ErrExceedsBurst is returned, with Allowed false, when n is greater than the limit's
	// Burst, or than the part of it left to the request's priority (priority.Reserves): such a
	// request can never be allowed.
	ErrExceedsBurst = errors.New("ratelimit: cost exceeds burst")
	// ErrNotSupported is returned by an operation or algorithm a backend does not implement,
	// such as Wait on the Redis backend, or a Limit's Warmup on an algorithm other than the
	// token bucket.
	ErrNotSupported = errors.New("ratelimit: not supported")
	// ErrClosed is returned by every call made after Close.
	ErrClosed = errors.New("ratelimit: limiter closed")
	// ErrTimeout is wrapped by the error a backend returns when it did not answer within the
	// limiter's own deadline (distributed.WithTimeout): a failure of the backend. When the
	// caller's context ends first, the error is the context's, which says nothing of the
	// backend's health.
	ErrTimeout = errors.New("ratelimit: backend did not answer in time")
	// ErrInvalidState is returned when a bucket holds a value the limiter cannot read (a
	// Redis key written by something else, say). It concerns that bucket only, not the
	// backend's health.
	ErrInvalidState = errors.New("ratelimit: bucket holds a value the limiter cannot read")
)

// LimitValidator is implemented by limiters that can say, before any request, whether they
// accept a limit: beyond Limit.Validate, a backend may bound the rate (the Redis backend's
// MaxRate) or the burst (an algorithm's, such as SlidingWindowLog's). Middleware
// constructors call it on the limits they are given, so that a limit that could never be
// enforced is a mistake found at start-up rather than an error on every request.
type LimitValidator interface {
	// ValidateLimit returns nil if the limiter accepts limit, or an error that says why
	// not, wrapping ErrInvalidArgument, or ErrNotSupported for an algorithm the limiter does
	// not implement or a feature of the limit that its algorithm lacks (a Warmup on any
	// algorithm but the token bucket). It checks the limit under the algorithm that would
	// decide it: the limit's own, or the limiter's default (see Limit.Algorithm).
	ValidateLimit(limit Limit) error
}
