package ratelimit

import (
	"context"
	"time"
)

// Settler is implemented by limiters that can settle a cost known only once the work is
// done (an LLM call's tokens, a response's bytes): the request is decided for an estimate,
// reserved, and settled afterwards to what it really cost, actual. Find it with As.
//
// Debt: a settle may charge a bucket past empty, into debt, by at most Burst tokens (a
// bucket at most 2·Burst short of full). Later requests wait the debt out: AllowN denies
// while the bucket is in debt, and its RetryAfter counts the debt. A settle that would go
// deeper is refused whole, charging nothing, with an error wrapping ErrExceedsBurst: an
// overrun is never dropped silently. What debt is per algorithm is the backend's to say;
// an algorithm that cannot keep it exactly refuses an overrun with ErrNotSupported.
type Settler interface {
	// Settle settles the decision whose Result.Charge is c, which reserved tokens, to
	// actual tokens (both ≥ 0, else ErrInvalidCost): when actual < reserved it gives
	// reserved − actual back exactly as Inspector.Refund with c does; when actual >
	// reserved it charges the overrun, actual − reserved, at once, whatever the bucket
	// holds, within the debt bound. It returns the bucket's state afterwards as Peek would
	// for one token. A limiter made of several (package fallback) settles the part that
	// charged, which c names.
	Settle(ctx context.Context, key string, limit Limit, c Charge, reserved, actual int) (Result, error)
	// Hold decides n tokens as AllowN does and, when they are taken, records them as a
	// reservation in flight for ttl (at least 1 µs), which Settle (or Refund) with the
	// Result's Charge ends: N callers that hold an estimate at once cannot all pass on a
	// bucket that fits fewer, and a hold no settle reaches (its holder crashed) is given back
	// after ttl. The middlewares' WithSettle decide with it. A backend whose buckets live in
	// its holder's own process (package local) holds as AllowN charges: a crash of the holder
	// takes the bucket with it.
	Hold(ctx context.Context, key string, limit Limit, n int, ttl time.Duration) (Result, error)
}

// Reserver is implemented by limiters that can book a slot ahead: charge a request now for
// a moment that may come later, within a wait the caller accepts. Find it with As.
type Reserver interface {
	// Reserve books n tokens if the request's slot comes within maxWait, and within the
	// backend's ceiling, the debt bound of Settler (a bucket at most Burst tokens in debt):
	// it charges them now and returns Allowed true with the Delay to hold the request
	// before it proceeds (0 when it conforms now). Otherwise it charges nothing and returns
	// Allowed false with RetryAfter the wait the slot would have needed. n > Burst (or
	// above the burst left to ctx's priority) is ErrExceedsBurst. To give a booked slot up,
	// Refund n with the Result's Charge: the charge is undone exactly, as far as Refund says.
	// A plain AllowN on a bucket booked ahead is denied until the bookings have passed.
	Reserve(ctx context.Context, key string, limit Limit, n int, maxWait time.Duration) (Result, error)
}
