package ratelimit

import "context"

// Request is one limit to enforce on one decision of MultiLimiter.AllowAll.
type Request struct {
	// Key names the bucket, with Limit.
	Key string
	// Limit is the limit of the bucket; the zero Limit means unlimited: the entry is
	// skipped, and reported as allowed.
	Limit Limit
	// N is the number of tokens to take; 0 means 1.
	N int
	// Name is the rule's name, for headers, metrics and errors; never the key, which may be
	// personal data.
	Name string
}

// MultiResult is the outcome of a decision over several Requests.
type MultiResult struct {
	// Allowed reports whether every request was allowed, and so every bucket charged.
	Allowed bool
	// Results holds one Result per Request, in the same order. On a denial each says what
	// AllowN alone would have said, and nothing was taken from any bucket.
	Results []Result
	// Binding is, on a denial, the index of the request with the longest RetryAfter (so
	// Results[Binding].RetryAfter is when to retry); when allowed, the index of the one with
	// the fewest Remaining (ties: the first). It is the request whose Result headers report.
	Binding int
}

// MultiLimiter is implemented by limiters that decide several limits at once, all or
// nothing: every bucket is charged or none is. Find it with As; a limiter without it
// cannot decide several limits atomically, and middleware asked to do so refuses to start
// rather than fall back to a loop of AllowN calls.
type MultiLimiter interface {
	// AllowAll decides reqs together, each at the priority ctx carries (package priority).
	// Bad input is an error naming the entry (by index and Name, never the key), and takes
	// nothing: an empty list or the same (key, limit) twice, an empty or too long key, an
	// invalid limit, N < 0 (all ErrInvalidArgument), N > Burst, or above the
	// burst left to the priority (ErrExceedsBurst, with Binding on that entry), a limit with
	// a warm-up (ErrNotSupported: a cold bucket must record its warm-up even when it
	// denies). An entry with the zero Limit is skipped: its Result is Allowed with nothing
	// else set, and it is never Binding unless every entry is skipped.
	AllowAll(ctx context.Context, reqs []Request) (MultiResult, error)
}

// Inspector is implemented by limiters whose buckets can be read and adjusted. Find it with
// As.
type Inspector interface {
	// Peek returns what AllowN(ctx, key, limit, n) would answer now, and writes nothing:
	// a bucket that does not exist is not created.
	Peek(ctx context.Context, key string, limit Limit, n int) (Result, error)
	// Refund gives back n tokens that the decision whose Result.Charge is c took from the
	// bucket, never beyond a full bucket, and returns the bucket's state afterwards as Peek
	// would for one token. A missing bucket is a no-op.
	//
	// A refund with c gives back only what that decision took, where it took it: a window
	// algorithm gives back to the window that held c.At, and nothing once that window no
	// longer counts; the sliding log drops the entries it recorded at c.At, and nothing
	// once they have left the window. So refunds never let more requests through than if
	// the refunded ones had not been made. A limiter made of several (package fallback)
	// refunds the part that decided, or nothing. The algorithms that keep a theoretical
	// arrival time (TokenBucket, LeakyBucket) move it back by n at the refund's instant,
	// whatever c.At: exact unless, without the refunded request, the bucket would have
	// filled up between the charge and the refund, when the refund also gives back the
	// refill the full bucket would have lost (at most n tokens, at most the refill of that
	// time). The zero Charge gives n tokens back to the bucket's current state (its current
	// window, its newest entries, the part of a fallback that would decide now): an
	// operator's manual refund, not the undoing of one decision.
	Refund(ctx context.Context, key string, limit Limit, n int, c Charge) (Result, error)
	// Reset makes the bucket full again.
	Reset(ctx context.Context, key string, limit Limit) error
}

// errInvalidRequest is the ErrInvalidArgument of AllowAll for a list of requests it cannot
// decide as a whole: an empty list, or the same (key, limit) twice; and of Refund for a
// Charge that names no part of the limiter.
var errInvalidRequest error = invalidArgument("ratelimit: invalid request list")

// As finds the capability T of l (MultiLimiter, Inspector, LimitValidator, or any other
// interface or type), through any wrapper, the way errors.As finds an error: l itself when
// it is a T; else what l's method As(target any) bool, if it has one, stores in target, a
// *T, when it reports true; else the same search in the limiter l's method Unwrap() Limiter
// returns, if it has one. ok is false when none of them is a T.
//
// A wrapper whose capabilities depend on the limiters it is made of (observe.Wrap,
// fallback.Limiter) has none of them in its method set: its As gives a T only when every
// part it needs has one, so that it never claims what its parts cannot do. A wrapper with
// Unwrap lends the capabilities it does not answer for, to be called on its limiter past
// it. Look a capability up when a limiter is handed over, and keep what As returns.
func As[T any](l Limiter) (T, bool) {
	for l != nil {
		if t, ok := l.(T); ok {
			return t, true
		}
		if a, ok := l.(interface{ As(target any) bool }); ok {
			var t T // on the heap: only here, not on every lookup
			if a.As(&t) {
				return t, true
			}
		}
		u, ok := l.(interface{ Unwrap() Limiter })
		if !ok {
			break
		}
		l = u.Unwrap()
	}
	var zero T
	return zero, false
}
