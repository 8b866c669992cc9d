package grpcmw

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/grpclog"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
)

// UnkeyedKey is the key under which calls are limited when the key function fails or
// returns an empty key. All such calls share it, so leaving out whatever the key is made of
// (a metadata value, a user ID) buys no extra calls. It has no ':' in it, so no key from
// package grpckeys can collide with it.
const UnkeyedKey = "unkeyed"

// PushbackKey is the trailer metadata key by which a server tells gRPC clients with a retry
// policy how long to wait before retrying, in milliseconds (gRFC A6). A denial carries the
// same delay as its RetryInfo; a call that can never be allowed carries "-1", which tells
// the client not to retry at all.
const PushbackKey = "grpc-retry-pushback-ms"

// Status messages. They are short and name no key, which may be personal data.
const (
	msgDenied       = "rate limit exceeded"
	msgExceedsBurst = "request cost exceeds the rate limit"
	msgUnavailable  = "rate limiter unavailable"
)

// logger reports errors for the default error handler.
var logger = grpclog.Component("ratelimit")

// interceptor holds what the four interceptors share: the limiter and the options.
type interceptor struct {
	limiter ratelimit.Limiter
	options
}

// newInterceptor applies opts and panics, naming the constructor, on a configuration that
// cannot work.
func newInterceptor(name string, l ratelimit.Limiter, opts []Option) *interceptor {
	if l == nil {
		panic("grpcmw: " + name + ": nil Limiter")
	}
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.limit == nil {
		panic("grpcmw: " + name + ": no limit configured: pass WithLimit, WithMethodLimits or WithLimitFunc")
	}
	if o.check != nil {
		if err := o.check(); err != nil {
			panic("grpcmw: " + name + ": " + err.Error())
		}
	}
	return &interceptor{limiter: l, options: o}
}

// admit decides whether a call, or with WithPerMessage a message, of fullMethod may
// proceed. It returns the trailer metadata the decision calls for (nil for none), and nil to
// let the call proceed or the error that ends it. With wait it waits for a token
// (Limiter.Wait) rather than failing.
func (m *interceptor) admit(ctx context.Context, fullMethod string, wait bool) (metadata.MD, error) {
	if m.skip != nil && m.skip(ctx, fullMethod) {
		return nil, nil
	}
	limit := m.limit(ctx, fullMethod)
	if limit.IsZero() {
		return nil, nil
	}
	key, err := m.key(ctx, fullMethod)
	if err == nil && key == "" {
		err = ratelimit.ErrKeyEmpty
	}
	if err != nil {
		if err := m.onError(ctx, fullMethod, fmt.Errorf("grpcmw: no key, limiting as %q: %w", UnkeyedKey, err)); err != nil {
			return nil, err
		}
		key = UnkeyedKey
	}
	if wait {
		return nil, m.waitTurn(ctx, fullMethod, key, limit)
	}

	n := 1
	if m.cost != nil {
		n = m.cost(ctx, fullMethod)
	}
	res, err := m.limiter.AllowN(ctx, key, limit, n)
	if err != nil {
		return m.fail(ctx, fullMethod, key, limit, err)
	}
	if !res.Allowed {
		return m.trailer(res, pushback(res.RetryAfter)), deniedError(key, res)
	}
	if res.Delay > 0 {
		if err := hold(ctx, res.Delay); err != nil {
			return nil, err
		}
	}
	return m.trailer(res, ""), nil
}

// waitTurn takes a token with Limiter.Wait. An error of the call's own context, or the
// limiter's report that the token would come after the deadline, ends the call with the
// context's code; any other error goes to the error policy.
func (m *interceptor) waitTurn(ctx context.Context, fullMethod, key string, limit ratelimit.Limit) error {
	err := m.limiter.Wait(ctx, key, limit)
	if err == nil {
		return nil
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return status.FromContextError(ctxErr).Err()
	}
	if _, ok := ctx.Deadline(); ok && errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, "rate limit: the call's deadline comes before its turn")
	}
	_, err = m.fail(ctx, fullMethod, key, limit, err)
	return err
}

// fail tells the error handler about a limiter error and applies the error policy.
func (m *interceptor) fail(ctx context.Context, fullMethod, key string, limit ratelimit.Limit, err error) (metadata.MD, error) {
	if herr := m.onError(ctx, fullMethod, fmt.Errorf("grpcmw: %w", err)); herr != nil {
		return nil, herr
	}
	switch {
	case errors.Is(err, ratelimit.ErrExceedsBurst):
		// Not a failure to decide: the call can never be allowed, so failing open would let
		// through exactly the calls the limit exists to stop, and retrying is pointless.
		return metadata.Pairs(PushbackKey, "-1"), statusError(codes.ResourceExhausted, msgExceedsBurst,
			quotaFailure(key, fmt.Sprintf("cost exceeds the burst of rate limit %v", limit)))
	case m.policy == ratelimit.FailClosed:
		// Unavailable says "cannot serve right now", true of a broken limiter; a denial
		// never says it (see the package documentation).
		return nil, status.Error(codes.Unavailable, msgUnavailable)
	}
	return nil, nil
}

// trailer returns the trailer metadata of a decision: the rate-limit fields when
// WithMetadata asks for them, and the pushback when given; nil when there is none.
func (m *interceptor) trailer(res ratelimit.Result, pushback string) metadata.MD {
	var md metadata.MD
	if m.metadata {
		md = metadata.MD{}
		for _, f := range headers.Fields(m.style, m.policyName, res) {
			md.Set(f.Name, f.Value) // Set lowercases the name, as gRPC metadata keys must be
		}
	}
	if pushback != "" {
		if md == nil {
			md = metadata.MD{}
		}
		md.Set(PushbackKey, pushback)
	}
	return md
}

// hold waits d before the call proceeds, as a shaping algorithm (ratelimit.LeakyBucket)
// asks, or ends the call with its context's code if the context ends first.
func hold(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

// logError is the default error handler: it logs err and lets the interceptor go on.
func logError(_ context.Context, fullMethod string, err error) error {
	logger.Errorf("%s: %v", fullMethod, err)
	return nil
}
