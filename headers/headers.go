package headers

import (
	"net/http"
	"strconv"
	"time"
	"unsafe"

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
	var scratch [128]byte
	fs := build(scratch[:0], style, policy, res, nil, nil)
	fields := make([]Field, fs.n)
	start := 0
	for i := range fs.n {
		fields[i] = Field{names[fs.ids[i]].name, string(fs.buf[start:fs.ends[i]])}
		start = fs.ends[i]
	}
	return fields
}

// Set writes the fields of style for res into h, replacing any earlier values of the same
// fields; see Fields. It costs one allocation, whatever the style, but for values longer
// than a hundred bytes or so (the IETF fields of a long policy name), which cost two.
func Set(h http.Header, style Style, policy string, res ratelimit.Result) {
	var scratch [128]byte
	write(h, build(scratch[:0], style, policy, res, nil, nil))
}

// SetMulti writes the fields of a decision over several limits into h: the fields of Set
// for the binding limit's Result (mr.Results[mr.Binding], named by its Request's Name, or
// DefaultPolicyName), except that RateLimit-Policy lists every limit of reqs that is not the
// zero Limit, by name, as the IETF draft allows. On a denial, Retry-After is the binding
// entry's.
func SetMulti(h http.Header, style Style, reqs []ratelimit.Request, mr ratelimit.MultiResult) {
	b := mr.Binding
	if b < 0 || b >= len(reqs) || b >= len(mr.Results) {
		return
	}
	res := mr.Results[b]
	res.Allowed = mr.Allowed
	write(h, build(make([]byte, 0, 128), style, nameOf(reqs[b]), res, reqs, mr.Results))
}

// nameOf returns the policy name of q.
func nameOf(q ratelimit.Request) string {
	if q.Name == "" {
		return DefaultPolicyName
	}
	return q.Name
}

// write puts the fields of fs into h: with one allocation, which holds the values' bytes and
// the slices h keys them by, when the values fit in a block's buffer; with two otherwise.
func write(h http.Header, fs fieldSet) {
	if fs.n == 0 {
		return
	}
	var (
		all  string
		vals []string
	)
	switch n := len(fs.buf); {
	case fs.n <= len(smallBlock{}.vals) && n <= len(smallBlock{}.buf):
		b := new(smallBlock)
		copy(b.buf[:], fs.buf)
		all, vals = unsafe.String(&b.buf[0], n), b.vals[:fs.n] // b.buf is never written again
	case n <= len(valueBlock{}.buf):
		b := new(valueBlock)
		copy(b.buf[:], fs.buf)
		all, vals = unsafe.String(&b.buf[0], n), b.vals[:fs.n]
	default:
		all, vals = string(fs.buf), make([]string, fs.n)
	}
	start := 0
	for i := range fs.n {
		vals[i] = all[start:fs.ends[i]]
		start = fs.ends[i]
		h[names[fs.ids[i]].canonical] = vals[i : i+1 : i+1]
	}
}

// smallBlock and valueBlock hold the values of one response's fields and the slices an
// http.Header keys them by, in one allocation: 112 bytes for the X-RateLimit fields (and
// Retry-After), 224 for any set of fields; both sizes are size classes of the allocator.
type (
	smallBlock struct {
		vals [4]string
		buf  [48]byte
	}
	valueBlock struct {
		vals [numFields]string
		buf  [128]byte
	}
)

// The fields, each under its name as the specifications spell it, and as Go's http.Header
// keys it.
const (
	idRetryAfter = iota
	idLimit
	idRemaining
	idReset
	idPolicy
	idRateLimit
	numFields
)

var names = [numFields]struct{ name, canonical string }{
	{NameRetryAfter, "Retry-After"},
	{NameLimit, "X-Ratelimit-Limit"},
	{NameRemaining, "X-Ratelimit-Remaining"},
	{NameReset, "X-Ratelimit-Reset"},
	{NamePolicy, "Ratelimit-Policy"},
	{NameRateLimit, "Ratelimit"},
}

// fieldSet holds the fields of one decision: their values one after the other in buf, the
// i-th ending at ends[i], and which field each is.
type fieldSet struct {
	buf  []byte
	ends [numFields]int
	ids  [numFields]int
	n    int
}

func (fs *fieldSet) end(id int) {
	fs.ends[fs.n], fs.ids[fs.n] = len(fs.buf), id
	fs.n++
}

// build appends the values of the fields of style for res to dst, in the order of Fields.
// When policies is not nil, RateLimit-Policy lists its limits (but the zero ones) instead of
// policy's: each as the limit applied, results[i].Limit, which a limiter may have set to
// another than the one asked for (fallback's share of it, while degraded).
func build(dst []byte, style Style, policy string, res ratelimit.Result, policies []ratelimit.Request, results []ratelimit.Result) fieldSet {
	fs := fieldSet{buf: dst}
	if !res.Allowed {
		fs.buf = strconv.AppendInt(fs.buf, RetryAfterSeconds(res.RetryAfter), 10)
		fs.end(idRetryAfter)
	}
	switch style {
	case StyleIETF, StyleNone:
	default:
		fs.buf = strconv.AppendInt(fs.buf, int64(max(res.Limit.Burst, 0)), 10)
		fs.end(idLimit)
		fs.buf = strconv.AppendInt(fs.buf, int64(max(res.Remaining, 0)), 10)
		fs.end(idRemaining)
		fs.buf = strconv.AppendInt(fs.buf, ceilSeconds(res.ResetAfter), 10)
		fs.end(idReset)
	}
	if style == StyleIETF || style == StyleBoth {
		if policies != nil {
			first := true
			for i, q := range policies {
				if q.Limit == (ratelimit.Limit{}) {
					continue
				}
				if !first {
					fs.buf = append(fs.buf, ", "...)
				}
				first = false
				applied := q.Limit
				if i < len(results) && results[i].Limit != (ratelimit.Limit{}) {
					applied = results[i].Limit
				}
				fs.buf = appendPolicy(fs.buf, nameOf(q), applied)
			}
		} else {
			fs.buf = appendPolicy(fs.buf, policy, res.Limit)
		}
		fs.end(idPolicy)
		fs.buf = appendRateLimit(fs.buf, policy, res)
		fs.end(idRateLimit)
	}
	return fs
}

// XRateLimit returns X-RateLimit-Limit (the limit's Burst: the most requests a client can
// send at once), X-RateLimit-Remaining (whole requests left now) and X-RateLimit-Reset
// (seconds until the bucket is full again, rounded up; 0 when it is full). Out-of-range
// values in res are clamped to 0, so every value is a non-negative decimal integer.
func XRateLimit(res ratelimit.Result) []Field {
	res.Allowed = true // no Retry-After
	return Fields(StyleXRateLimit, "", res)
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
