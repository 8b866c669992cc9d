package headers

import (
	"math"
	"strconv"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/calendar"
)

// maxSFInteger is the largest Integer a structured field may carry (RFC 9651, section
// 3.3.1: at most 15 digits). Larger values are clamped to it.
const maxSFInteger = 999_999_999_999_999

// Policy returns the value of RateLimit-Policy for one policy named name under limit l:
// a String item with the quota q and the window w in seconds, as in
// `"default";q=100;w=60` for ratelimit.PerMinute(100).
//
// A token bucket admits Burst requests at once and then Rate per second, so the policy is
// q = Burst per w = Burst/Rate seconds, the window in which a drained bucket fills again.
// The draft wants w in whole seconds, at least 1, so w is rounded up (a client that spreads
// q requests over the longer window stays within the limit); when Burst/Rate is under one
// second, the policy is instead the requests per second, q = floor(Rate), w = 1. A limit
// whose Rate is not a finite positive number gets no w parameter (the draft makes it
// optional). A calendar quota states its period's nominal length: w=86400 for a day (the
// day it is, 23 or 25 hours long, included), 604800 a week, 2629746 (a year's twelfth) a
// month, times the period's count; RateLimit's t and X-RateLimit-Reset count to the
// period's real end. Characters a String item cannot hold (outside printable ASCII) are replaced
// by '?' in the name.
func Policy(name string, l ratelimit.Limit) string {
	return string(appendPolicy(nil, name, l))
}

func appendPolicy(b []byte, name string, l ratelimit.Limit) []byte {
	q, w := policyWindow(l)
	b = appendString(b, name)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, q, 10)
	if w > 0 {
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, w, 10)
	}
	return b
}

// RateLimit returns the value of the RateLimit field for the policy named name: a String
// item with r, the requests left (res.Remaining), and t, the effective window in seconds,
// as in `"default";r=0;t=30`.
//
// On a denial t is the Retry-After value, so that Retry-After never points earlier than
// the end of the effective window (the draft's rule, section 6). When the request was
// allowed, t is the time until the bucket is full again, rounded up: within it the client
// may spend r requests without being denied. The bucket refills during that time too, so
// the real allowance is larger; the field errs on the safe side, which the draft permits.
func RateLimit(name string, res ratelimit.Result) string {
	return string(appendRateLimit(nil, name, res))
}

func appendRateLimit(b []byte, name string, res ratelimit.Result) []byte {
	t := ceilSeconds(res.ResetAfter)
	if !res.Allowed {
		t = RetryAfterSeconds(res.RetryAfter)
	}
	b = appendString(b, name)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, min(int64(max(res.Remaining, 0)), maxSFInteger), 10)
	b = append(b, ";t="...)
	return strconv.AppendInt(b, min(t, maxSFInteger), 10)
}

// policyWindow returns the q and w parameters of Policy; w == 0 means none.
func policyWindow(l ratelimit.Limit) (q, w int64) {
	q = min(int64(max(l.Burst, 0)), maxSFInteger)
	if l.Algorithm == ratelimit.CalendarQuota {
		return q, calendar.Nominal(l.Period)
	}
	if math.IsNaN(l.Rate) || math.IsInf(l.Rate, 0) || l.Rate <= 0 {
		return q, 0
	}
	window := float64(q) / l.Rate
	if window < 1 {
		return int64(min(max(math.Floor(l.Rate), float64(q)), maxSFInteger)), 1
	}
	// Burst/Rate is often a whole number that float division misses by an ulp (60.00000001):
	// round such values instead of bumping them to the next second.
	if r := math.Round(window); math.Abs(window-r) <= 1e-9*window {
		window = r
	}
	if window >= maxSFInteger {
		return q, maxSFInteger
	}
	return q, int64(math.Ceil(window))
}

// appendString appends s as a structured-field String (RFC 9651, section 3.3.3): in double
// quotes, with '"' and '\\' escaped by a backslash and any byte outside printable ASCII
// replaced by '?'.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20 || c > 0x7e:
			b = append(b, '?')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
