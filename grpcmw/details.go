package grpcmw

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/bucket"
	"github.com/sluice-go/ratelimit/internal/pipeline"
)

// deniedError is the status of a denial: ResourceExhausted with RetryInfo and a
// QuotaFailure that names every violated limit. The status is built as the google.rpc.Status
// that status.FromProto copies (the RetryInfo encoded by hand, the QuotaFailure of one limit
// kept from the latest denial), in a value of a pool, since FromProto copies all it reads:
// a third of the allocations of Status.WithDetails.
func (m *interceptor) deniedError(d *pipeline.Decision) error {
	var qf *anypb.Any
	if d.Reqs == nil {
		qf = m.exceeded(keyKind(d.Key), d.Policy, d.Result.Limit)
	} else {
		var err error
		if qf, err = anypb.New(multiQuotaFailure(d)); err != nil {
			// cannot happen: a QuotaFailure marshals
			return status.Error(codes.ResourceExhausted, pipeline.MsgDenied)
		}
	}
	x := denials.Get().(*denial)
	x.st.Code, x.st.Message = int32(codes.ResourceExhausted), pipeline.MsgDenied
	x.retry.TypeUrl, x.retry.Value = retryInfoURL, appendRetryInfo(x.value[:0], retryDelay(d.Result.RetryAfter))
	x.details = [2]*anypb.Any{&x.retry, qf}
	x.st.Details = x.details[:]
	err := status.FromProto(&x.st).Err()
	x.details[1] = nil // the QuotaFailure of several limits is not kept
	denials.Put(x)
	return err
}

// denial is the google.rpc.Status of a denial, with room for its details.
type denial struct {
	st      spb.Status
	details [2]*anypb.Any // RetryInfo, QuotaFailure
	retry   anypb.Any
	value   [2 + 2*(1+binary.MaxVarintLen64)]byte // the RetryInfo: see appendRetryInfo
}

var denials = sync.Pool{New: func() any { return new(denial) }}

// multiQuotaFailure is the QuotaFailure of a denial under several limits: one violation per
// limit that denied.
func multiQuotaFailure(d *pipeline.Decision) *errdetails.QuotaFailure {
	qf := &errdetails.QuotaFailure{}
	for i, q := range d.Reqs {
		if i < len(d.Multi.Results) && q.Limit != (ratelimit.Limit{}) && !d.Multi.Results[i].Allowed {
			qf.Violations = append(qf.Violations, &errdetails.QuotaFailure_Violation{
				Subject:     keyKind(bucket.KeyOf(q.Key)),
				Description: fmt.Sprintf("rate limit %q (%v) exceeded", q.Name, q.Limit),
			})
		}
	}
	return qf
}

// retryInfoURL is the type URL of google.rpc.RetryInfo in an Any.
var retryInfoURL = "type.googleapis.com/" + string((&errdetails.RetryInfo{}).ProtoReflect().Descriptor().FullName())

// appendRetryInfo appends RetryInfo{RetryDelay: d} to b, encoded as proto.Marshal encodes
// it: field 1, the google.protobuf.Duration, whose seconds (field 1) and nanos (field 2)
// are written when not zero.
func appendRetryInfo(b []byte, d time.Duration) []byte {
	secs, nanos := int64(d/time.Second), int64(d%time.Second)
	var dur [2 * (1 + binary.MaxVarintLen64)]byte
	v := dur[:0]
	if secs != 0 {
		v = protowire.AppendTag(v, 1, protowire.VarintType)
		v = protowire.AppendVarint(v, uint64(secs))
	}
	if nanos != 0 {
		v = protowire.AppendTag(v, 2, protowire.VarintType)
		v = protowire.AppendVarint(v, uint64(nanos))
	}
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// exceeded returns the QuotaFailure of a denial under limit of the policy named policy, of
// a key of the kind subject, with the description `rate limit "login" (2/min) exceeded`,
// as for each of several limits. The latest one is kept, since most interceptors deny
// under one limit or a few; status.FromProto copies it into each status.
func (m *interceptor) exceeded(subject, policy string, limit ratelimit.Limit) *anypb.Any {
	if d := m.description.Load(); d != nil && d.subject == subject && d.policy == policy && d.limit == limit {
		return d.detail
	}
	qf := quotaFailure(subject, fmt.Sprintf("rate limit %q (%v) exceeded", policy, limit))
	detail, err := anypb.New(qf)
	if err != nil {
		return nil // cannot happen: a QuotaFailure marshals
	}
	m.description.Store(&description{subject, policy, limit, detail})
	return detail
}

type description struct {
	subject, policy string
	limit           ratelimit.Limit
	detail          *anypb.Any
}

// statusError returns the error of a status with details.
func statusError(c codes.Code, msg string, details ...protoadapt.MessageV1) error {
	st := status.New(c, msg)
	if withDetails, err := st.WithDetails(details...); err == nil {
		st = withDetails
	} // WithDetails fails only for an OK status or a message that cannot be marshalled
	return st.Err()
}

// quotaFailure names the kind of key that was limited (subject: see keyKind), never the key
// itself.
func quotaFailure(subject, description string) *errdetails.QuotaFailure {
	return &errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
		Subject:     subject,
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
