package grpcmw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/grpclog"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/internal/pipeline"
)

// UnkeyedKey is the key under which calls are limited when the key function fails or
// returns a key the limiter cannot take (empty, or longer than 512 bytes): all
// such calls share one bucket. No key function of this module returns it.
const UnkeyedKey = pipeline.UnkeyedKey

// PushbackKey is the trailer metadata key by which a server tells gRPC clients with a retry
// policy how long to wait before retrying, in milliseconds (gRFC A6). A denial carries the
// same delay as its RetryInfo; a call that can never be allowed carries "-1", which tells
// the client not to retry at all.
const PushbackKey = "grpc-retry-pushback-ms"

// logger reports errors for the default error handler.
var logger = grpclog.Component("ratelimit")

// interceptor holds what the four interceptors share.
type interceptor struct {
	p *pipeline.Pipeline[call]
	options
	description atomic.Pointer[description] // see exceeded
}

// newInterceptor applies opts and panics, naming the constructor, on a configuration that
// cannot work. A client's calls wait for their turn with WithWait; a server ignores it.
func newInterceptor(name string, l ratelimit.Limiter, opts []Option, client bool) *interceptor {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	o.Wait = client && o.wait
	p, err := pipeline.New("grpcmw: ", l, &o.Options, func(c call, err error) error {
		return o.onError(c.ctx, c.method, err)
	})
	if errors.Is(err, pipeline.ErrNoLimit) {
		panic("grpcmw: " + name + ": no limit configured: pass WithLimit, WithMethodLimits, WithLimitFunc, WithLimits or WithRules")
	}
	if err != nil {
		panic("grpcmw: " + name + ": " + err.Error())
	}
	return &interceptor{p: p, options: o}
}

// after gives the call's tokens back when WithRefundIf says so of err, the handler's, and
// otherwise settles them to the call's actual cost (WithSettle): a stream's, when it ends.
func (m *interceptor) after(ctx context.Context, fullMethod string, d *pipeline.Decision, err error) {
	if (m.Refund != nil || m.Settle != nil) && d.Charged {
		c := call{ctx: ctx, method: fullMethod, err: err}
		m.p.Refund(ctx, c, d)
		m.p.Settle(ctx, c, d)
	}
}

// decide decides whether a call, or with WithPerMessage a message, of fullMethod may
// proceed, in d (for a refund after the handler: see after). It returns the trailer
// metadata the decision calls for (nil for none), and nil to let the call proceed or the
// error that ends it. With wait it waits for its turn (Limiter.Wait) instead.
func (m *interceptor) decide(ctx context.Context, fullMethod string, wait bool, d *pipeline.Decision) (metadata.MD, error) {
	c := call{ctx: ctx, method: fullMethod}
	if wait {
		m.p.Wait(ctx, c, d)
	} else {
		m.p.Decide(ctx, c, d)
	}
	switch d.Verdict {
	case pipeline.Proceed:
		if d.Decided {
			return m.trailer(d, ""), nil
		}
		return nil, nil
	case pipeline.Deny:
		var err error
		if m.denied != nil {
			err = m.denied(ctx, fullMethod, d.Result)
		}
		if err == nil {
			err = m.deniedError(d)
		}
		return m.trailer(d, pushback(d.Result.RetryAfter)), err
	case pipeline.TooCostly:
		// Retrying is pointless: the pushback of -1 tells clients not to.
		return metadata.Pairs(PushbackKey, "-1"), statusError(codes.ResourceExhausted, pipeline.MsgTooCostly,
			quotaFailure(keyKind(d.Key), fmt.Sprintf("cost exceeds the burst of rate limit %v", d.Limit)))
	case pipeline.Invalid:
		return nil, status.Error(codes.Internal, pipeline.MsgInvalid)
	case pipeline.Busy:
		// ResourceExhausted, as a denial is, but with no pushback: nobody knows when a
		// permit frees, so the client's retry policy decides (see WithConcurrency).
		return nil, status.Error(codes.ResourceExhausted, pipeline.MsgBusy)
	case pipeline.Unavailable:
		// Unavailable says "cannot serve right now", true of a broken limiter; a denial
		// never says it (see the package documentation).
		return nil, status.Error(codes.Unavailable, pipeline.MsgUnavailable)
	case pipeline.Ended:
		if ctx.Err() == nil { // WithWait: the turn would come after the deadline
			return nil, status.Error(codes.DeadlineExceeded, "rate limit: the call's deadline comes before its turn")
		}
		return nil, status.FromContextError(ctx.Err()).Err()
	default: // pipeline.Handled
		return nil, d.Err
	}
}

// trailer returns the trailer metadata of a decision: the rate-limit fields of the header
// style, and the pushback when given; nil when there is none.
func (m *interceptor) trailer(d *pipeline.Decision, pushback string) metadata.MD {
	style := m.p.Style(d)
	if style == headers.StyleNone && d.Result.Allowed {
		return nil
	}
	md := make(metadata.MD, 6)
	if d.Reqs != nil {
		headers.SetMulti(http.Header(md), style, d.Reqs, d.Multi)
	} else {
		headers.Set(http.Header(md), style, d.Policy, d.Result)
	}
	for _, n := range fieldNames { // metadata keys are lower case
		if v, ok := md[n.canonical]; ok {
			delete(md, n.canonical)
			md[n.lower] = v
		}
	}
	if pushback != "" {
		md[PushbackKey] = []string{pushback}
	}
	return md
}

// fieldNames are the names of the rate-limit fields as headers.Set keys them in an
// http.Header, and as gRPC metadata keys them.
var fieldNames = func() (names [6]struct{ canonical, lower string }) {
	for i, n := range [...]string{headers.NameRetryAfter, headers.NameLimit, headers.NameRemaining,
		headers.NameReset, headers.NamePolicy, headers.NameRateLimit} {
		names[i].canonical, names[i].lower = http.CanonicalHeaderKey(n), strings.ToLower(n)
	}
	return names
}()

// logErrors returns the default error handler: it logs err, at most once a second (see
// pipeline.LogEvery) with the number of errors left out since the last line, and lets the
// interceptor go on.
func logErrors() func(context.Context, string, error) error {
	t := pipeline.NewThrottle()
	return func(_ context.Context, fullMethod string, err error) error {
		if ok, dropped := t.Allow(); ok {
			logger.Errorf("%s: %v (%d more errors since the last line)", fullMethod, err, dropped)
		}
		return nil
	}
}
