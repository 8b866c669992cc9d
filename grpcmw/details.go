package grpcmw

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/pipeline"
)

// deniedError is the status of a denial: ResourceExhausted with RetryInfo and a
// QuotaFailure that names every violated limit.
func (m *interceptor) deniedError(d pipeline.Decision) error {
	retry := &errdetails.RetryInfo{RetryDelay: durationpb.New(retryDelay(d.Result.RetryAfter))}
	if d.Reqs == nil {
		return statusError(codes.ResourceExhausted, pipeline.MsgDenied, retry, quotaFailure(d.Key, m.exceeded(d.Policy, d.Result.Limit)))
	}
	qf := &errdetails.QuotaFailure{}
	for i, q := range d.Reqs {
		if i < len(d.Multi.Results) && !q.Limit.IsZero() && !d.Multi.Results[i].Allowed {
			qf.Violations = append(qf.Violations, &errdetails.QuotaFailure_Violation{
				Subject:     keyKind(pipeline.KeyOf(q.Key)),
				Description: fmt.Sprintf("rate limit %q (%v) exceeded", q.Name, q.Limit),
			})
		}
	}
	return statusError(codes.ResourceExhausted, pipeline.MsgDenied, retry, qf)
}

// exceeded returns the QuotaFailure description of a denial under limit of the policy
// named policy, `rate limit "login" (2/min) exceeded`, as for each of several
// limits. The latest one is kept, since most interceptors deny under one limit or a few.
func (m *interceptor) exceeded(policy string, limit ratelimit.Limit) string {
	if d := m.description.Load(); d != nil && d.policy == policy && d.limit == limit {
		return d.text
	}
	d := &description{policy, limit, fmt.Sprintf("rate limit %q (%v) exceeded", policy, limit)}
	m.description.Store(d)
	return d.text
}

type description struct {
	policy string
	limit  ratelimit.Limit
	text   string
}

// statusError returns the error of a status with details.
func statusError(c codes.Code, msg string, details ...protoadapt.MessageV1) error {
	st := status.New(c, msg)
	if withDetails, err := st.WithDetails(details...); err == nil {
		st = withDetails
	} // WithDetails fails only for an OK status or a message that cannot be marshalled
	return st.Err()
}

// quotaFailure names the kind of key that was limited, never the key itself.
func quotaFailure(key, description string) *errdetails.QuotaFailure {
	return &errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
		Subject:     keyKind(key),
		Description: description,
	}}}
}

// retryDelay returns d rounded up to the millisecond, the unit of the pushback trailer, and
// at least 1 ms: a client that waits that long is never early, and RetryInfo and the
// pushback say the same.
func retryDelay(d time.Duration) time.Duration {
	if d <= time.Millisecond {
		return time.Millisecond
	}
	r := d.Truncate(time.Millisecond)
	if r < d && r <= math.MaxInt64-time.Millisecond {
		r += time.Millisecond
	}
	return r
}

// pushback returns the value of the pushback trailer for a RetryAfter of d.
func pushback(d time.Duration) string {
	return strconv.FormatInt(retryDelay(d).Milliseconds(), 10)
}

// keyKind returns what a key is made of, for the QuotaFailure subject: the labels of its
// parts ("ip", "x-api-key", "user|rpc"), never their values, which may be personal data. A
// part without a label, or whose label does not look like one (lower-case letters, digits,
// '.', '_' and '-', at most 32 bytes), counts as "key". Hashed keys are "h".
func keyKind(key string) string {
	if key == UnkeyedKey {
		return UnkeyedKey
	}
	if !strings.Contains(key, "|") { // one part: its label is a substring, no copy needed
		if label, _, ok := strings.Cut(key, ":"); ok && isLabel(label) {
			return label
		}
		return "key"
	}
	parts := strings.Split(key, "|")
	for i, p := range parts {
		label, _, ok := strings.Cut(p, ":")
		if !ok || !isLabel(label) {
			label = "key"
		}
		parts[i] = label
	}
	return strings.Join(parts, "|")
}

// isLabel reports whether s looks like a label a program chose rather than a value a client
// sent.
func isLabel(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// RetryDelay returns the retry delay of a denial made by these interceptors, or of any
// status error with an errdetails.RetryInfo detail, and whether err had one. Clients that
// do their own retrying can wait that long: it is the limiter's RetryAfter rounded up to the
// millisecond.
func RetryDelay(err error) (time.Duration, bool) {
	st, ok := status.FromError(err)
	if !ok {
		return 0, false
	}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay() != nil {
			return ri.GetRetryDelay().AsDuration(), true
		}
	}
	return 0, false
}
