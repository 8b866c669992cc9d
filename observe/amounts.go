package observe

import (
	"sync/atomic"
	"time"
)

// Amounts counts what the settles and bookings ahead of one series moved: the tokens
// settles charged past the estimate or gave back, and the time bookings ahead booked. The
// metric observers (otelmetrics, prommetrics) keep one per (policy, backend) pair in a
// Series, and send them by policy: SumAmounts. The zero value counts nothing; it is safe
// for concurrent use.
type Amounts struct {
	overrun, refund, delay atomic.Int64 // tokens, tokens, µs
}

// Count adds what d moved, when it is an allowed settle or booking (Decision.Settle,
// Decision.Reserve): a booking's Delay; a settle's Actual − Cost as an overrun, or
// Cost − Actual as a refund. Any other decision counts nothing.
func (a *Amounts) Count(d Decision) {
	if d.Outcome != OutcomeAllowed {
		return
	}
	switch {
	case d.Reserve:
		a.delay.Add(d.Delay.Microseconds())
	case !d.Settle:
	case d.Actual > d.Cost:
		a.overrun.Add(int64(d.Actual - d.Cost))
	case d.Actual < d.Cost:
		a.refund.Add(int64(d.Cost - d.Actual))
	}
}

// AmountSums are the amounts of a policy's series, summed.
type AmountSums struct {
	// Overrun and Refund are tokens charged past the estimates, and given back.
	Overrun, Refund int64
	// Delay is the time booked ahead, to the microsecond.
	Delay time.Duration
}

// SumAmounts calls f once for each policy of t's series, with the Amounts of its series (one
// per backend) summed and the first of them All gives, whose labels f may use; a policy
// whose sums are all zero is left out. of returns a series' policy name and Amounts.
func SumAmounts[S any](t *Series[S], of func(*S) (string, *Amounts), f func(first *S, policy string, sums AmountSums)) {
	type sum struct {
		first *S
		AmountSums
	}
	var policies []string
	byPolicy := make(map[string]*sum)
	t.All(func(s *S) {
		policy, a := of(s)
		ps := byPolicy[policy]
		if ps == nil {
			ps = &sum{first: s}
			byPolicy[policy] = ps
			policies = append(policies, policy)
		}
		ps.Overrun += a.overrun.Load()
		ps.Refund += a.refund.Load()
		ps.Delay += time.Duration(a.delay.Load()) * time.Microsecond
	})
	for _, policy := range policies {
		if ps := byPolicy[policy]; ps.AmountSums != (AmountSums{}) {
			f(ps.first, policy, ps.AmountSums)
		}
	}
}
