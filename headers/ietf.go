package headers

import (
	"math"
	"strconv"
	"strings"

	"github.com/sluice-go/ratelimit"
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
// optional). Characters a String item cannot hold (outside printable ASCII) are replaced
// by '?' in the name.
func Policy(name string, l ratelimit.Limit) string {
	q, w := policyWindow(l)
	var b strings.Builder
	writeString(&b, name)
	b.WriteString(";q=")
	b.WriteString(strconv.FormatInt(q, 10))
	if w > 0 {
		b.WriteString(";w=")
		b.WriteString(strconv.FormatInt(w, 10))
	}
	return b.String()
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
	t := ceilSeconds(res.ResetAfter)
	if !res.Allowed {
		t = RetryAfterSeconds(res.RetryAfter)
	}
	var b strings.Builder
	writeString(&b, name)
	b.WriteString(";r=")
	b.WriteString(strconv.FormatInt(min(int64(max(res.Remaining, 0)), maxSFInteger), 10))
	b.WriteString(";t=")
	b.WriteString(strconv.FormatInt(min(t, maxSFInteger), 10))
	return b.String()
}

// policyWindow returns the q and w parameters of Policy; w == 0 means none.
func policyWindow(l ratelimit.Limit) (q, w int64) {
	q = min(int64(max(l.Burst, 0)), maxSFInteger)
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

// writeString writes s as a structured-field String (RFC 9651, section 3.3.3): in double
// quotes, with '"' and '\' escaped by a backslash and any byte outside printable ASCII
// replaced by '?'.
func writeString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c > 0x7e:
			b.WriteByte('?')
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
}
