package local

import (
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/calendar"
)

// quota is the state of a ratelimit.CalendarQuota bucket: the period it last admitted in,
// [start, end) in Unix µs, and how many tokens that period has given out; a count of
// another period is a count of zero. It is the fixed window's state with windows of the
// calendar, which differ in length, so it keeps both ends of its period rather than an
// index, and computes the next one only when the clock leaves it. Its methods read the
// period from the state, not from the limit they are given, which a sweep makes from the
// bucket's burst and algorithm alone.
type quota struct {
	period     ratelimit.Period
	loc        *time.Location
	start, end int64 // the period count belongs to; start == end: none yet
	count      int64
}

// bounds returns the period holding u: the one the bucket holds when it holds u, so that
// most decisions compute nothing.
func (q *quota) bounds(u int64) (start, end int64) {
	if q.start <= u && u < q.end {
		return q.start, q.end
	}
	return calendar.Bounds(q.period, q.loc, u)
}

// decide decides n tokens at u, as the fixed window does (fixedDecide): admitted when the
// period has given out at most Burst − n; RetryAfter and, while the period has counted
// anything, ResetAfter run to its end, exactly, across any change of offset. It returns
// the period and the count to keep if the request is allowed.
func (q *quota) decide(limit ratelimit.Limit, u int64, n int) (start, end, count int64, v verdict) {
	start, end = q.bounds(u)
	if start == q.start {
		count = q.count
	}
	allowed := count+int64(n) <= int64(limit.Burst)
	if allowed {
		count += int64(n)
	}
	v = verdict{allowed: allowed, remaining: max(limit.Burst-int(count), 0)}
	left := micros(end - u)
	if count > 0 {
		v.reset = left
	}
	if !allowed {
		v.retry = left
	}
	return start, end, count, v
}

func (q *quota) take(limit ratelimit.Limit, u int64, n int, _ time.Duration) (verdict, time.Duration) {
	start, end, count, v := q.decide(limit, u, n)
	if v.allowed {
		q.start, q.end, q.count = start, end, count
	}
	return v, 0
}

func (q *quota) peek(limit ratelimit.Limit, u int64, n int) (verdict, time.Duration) {
	_, _, _, v := q.decide(limit, u, n)
	return v, 0
}

// refund takes n from the count if the period that held at (noCharge: the current one) is
// the bucket's and still the current one, as the fixed window does and quota.lua's refund.
func (q *quota) refund(_ ratelimit.Limit, u, at int64, n int) {
	inPeriod := func(t int64) bool { return q.start <= t && t < q.end }
	if inPeriod(u) && (at == noCharge || inPeriod(at)) {
		q.count = max(q.count-int64(n), 0)
	}
}

// full reports whether the bucket's period has ended at u, or counted nothing. A time
// before its period does not qualify.
func (q *quota) full(_ ratelimit.Limit, u int64) bool {
	return q.count == 0 || u >= q.end
}

// periodCode is the part of a quota bucket's identity its period makes (see store.hash):
// the zone's number, count, anchor and unit, each in bits of its own, so that two periods
// have one code only if they are one period. Count and Anchor of zero and of one are one.
func (s *store) periodCode(p ratelimit.Period) uint64 {
	_, zone, _ := s.zones.Load(p.Zone) // validate has loaded it
	return uint64(zone)<<32 | uint64(max(p.Count, 1))<<12 | uint64(max(p.Anchor, 1))<<4 | uint64(p.Unit)
}
