package headers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-go/ratelimit"
)

// Field names, spelled as their specifications spell them. HTTP field names are
// case-insensitive: Set stores them in Go's canonical form ("X-Ratelimit-Limit"), and HTTP/2
// and gRPC send them in lower case.
const (
	NameRetryAfter = "Retry-After"
	NameLimit      = "X-RateLimit-Limit"
	NameRemaining  = "X-RateLimit-Remaining"
	NameReset      = "X-RateLimit-Reset"
	NamePolicy     = "RateLimit-Policy"
	NameRateLimit  = "RateLimit"
)

// DefaultPolicyName is the policy name the middleware puts in the IETF fields unless told
// otherwise, as in the draft's examples.
const DefaultPolicyName = "default"

// Field is one response header field.
type Field struct {
	Name  string
	Value string
}

// Style selects which rate-limit fields a response carries. The zero Style is
// StyleXRateLimit.
type Style int

const (
	// StyleXRateLimit sends X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset.
	// It is the default because it is what clients, SDKs and gateways read today; the IETF
	// fields are still a draft whose syntax changed between revisions.
	StyleXRateLimit Style = iota
	// StyleIETF sends RateLimit-Policy and RateLimit as defined by
	// draft-ietf-httpapi-ratelimit-headers-11.
	StyleIETF
	// StyleBoth sends the fields of StyleXRateLimit and of StyleIETF.
	StyleBoth
	// StyleNone sends no rate-limit fields; denials still carry Retry-After.
	StyleNone
)

// String returns the style's name, such as "StyleIETF".
func (s Style) String() string {
	switch s {
	case StyleXRateLimit:
		return "StyleXRateLimit"
	case StyleIETF:
		return "StyleIETF"
	case StyleBoth:
		return "StyleBoth"
	case StyleNone:
		return "StyleNone"
	}
	return "Style(" + strconv.Itoa(int(s)) + ")"
}

// Fields returns the fields of style for res, in a fixed order: Retry-After first when res
// is a denial, then the X-RateLimit fields, then RateLimit-Policy and RateLimit. policy is
// the policy name of the IETF fields. A style this package does not know counts as the
// default, StyleXRateLimit.
func Fields(style Style, policy string, res ratelimit.Result) []Field {
	fields := make([]Field, 0, 6)
	if !res.Allowed {
		fields = append(fields, Field{NameRetryAfter, strconv.FormatInt(RetryAfterSeconds(res.RetryAfter), 10)})
	}
	switch style {
	case StyleIETF, StyleNone:
	default:
		fields = append(fields, XRateLimit(res)...)
	}
	if style == StyleIETF || style == StyleBoth {
		fields = append(fields,
			Field{NamePolicy, Policy(policy, res.Limit)},
			Field{NameRateLimit, RateLimit(policy, res)})
	}
	return fields
}

// Set writes the fields of style for res into h, replacing any earlier values of the same
// fields; see Fields.
func Set(h http.Header, style Style, policy string, res ratelimit.Result) {
	for _, f := range Fields(style, policy, res) {
		h.Set(f.Name, f.Value)
	}
}

// XRateLimit returns X-RateLimit-Limit (the limit's Burst: the most requests a client can
// send at once), X-RateLimit-Remaining (whole requests left now) and X-RateLimit-Reset
// (seconds until the bucket is full again, rounded up; 0 when it is full). Out-of-range
// values in res are clamped to 0, so every value is a non-negative decimal integer.
func XRateLimit(res ratelimit.Result) []Field {
	return []Field{
		{NameLimit, strconv.Itoa(max(res.Limit.Burst, 0))},
		{NameRemaining, strconv.Itoa(max(res.Remaining, 0))},
		{NameReset, strconv.FormatInt(ceilSeconds(res.ResetAfter), 10)},
	}
}

// RetryAfterSeconds returns d in whole seconds rounded up, and at least 1: the value of
// Retry-After on a denial. A client told "0" would retry at once and be denied again;
// rounding down would send it back before the bucket has refilled.
func RetryAfterSeconds(d time.Duration) int64 {
	return max(ceilSeconds(d), 1)
}

// ceilSeconds returns d in whole seconds rounded up; 0 for d <= 0. It does not overflow
// for any Duration.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}
