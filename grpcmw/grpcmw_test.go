package grpcmw_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/grpcmw"
)

// outcome is what a test expects of one call: its code and, for ResourceExhausted, the
// denial and the pushback trailer.
type outcome struct {
	code     codes.Code
	denial   denial
	pushback string
}

// allowed is the outcome of a call that went through.
var allowed = outcome{code: codes.OK}

// outcomeOf reads the outcome of a call.
func outcomeOf(t *testing.T, md metadata.MD, err error) outcome {
	t.Helper()
	o := outcome{code: status.Code(err)}
	if o.code == codes.ResourceExhausted {
		o.denial = denialOf(t, err)
		require.LessOrEqual(t, len(md.Get(grpcmw.PushbackKey)), 1, "a second pushback value makes clients give up")
		if v := md.Get(grpcmw.PushbackKey); len(v) == 1 {
			o.pushback = v[0]
		}
	}
	return o
}

// step is one call of a timeline: the method ("A" or "B") and the expected outcome.
type step struct {
	method string
	want   outcome
}

// run plays steps through k's interceptor built on l with opts, and returns the env.
func run(t *testing.T, k interceptorKind, l ratelimit.Limiter, steps []step, opts ...grpcmw.Option) *env {
	t.Helper()
	e := k.env(t, l, opts...)
	for i, s := range steps {
		md, err := k.call(ctx(t), e, s.method)
		assert.Equal(t, s.want, outcomeOf(t, md, err), "step %d: %s %v", i, s.method, err)
	}
	return e
}

// PerMinute(2) gives a token back every 30 s: the third call in a row is denied with a retry
// delay of exactly 30 s, since the clock does not move. The server's handler runs twice; a
// client-side denial does not even reach the server.
func TestPassAndDeny(t *testing.T) {
	denied := outcome{codes.ResourceExhausted, denial{30e9, "rpc", "rate limit \"default\" (2/min) exceeded"}, "30000"}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			l, _ := newLimiter(t)
			e := run(t, k, l, []step{{"A", allowed}, {"A", allowed}, {"A", denied}, {"B", allowed}},
				grpcmw.WithLimit(ratelimit.PerMinute(2)))
			assert.Equal(t, int64(3), e.handled.Load())
			wantAttempts := int64(4)
			if !k.server {
				wantAttempts = 3 // the denied call never left the client
			}
			assert.Equal(t, wantAttempts, e.attempts.Load())
		})
	}
}

// The status message is short and names no key.
func TestDeniedStatus(t *testing.T) {
	l, _ := newLimiter(t)
	e := kinds[0].env(t, l, grpcmw.WithLimit(ratelimit.PerMinute(1)))
	_, err := e.unaryCall(ctx(t), "A")
	require.NoError(t, err)
	_, err = e.unaryCall(ctx(t), "A")
	assert.Equal(t, "rpc error: code = ResourceExhausted desc = rate limit exceeded", err.Error())
	d, ok := grpcmw.RetryDelay(err)
	assert.True(t, ok)
	assert.Equal(t, "1m0s", d.String())
}

// Method A allows one call a minute, every other method three. A's limit is the policy
// named by its full method; the others are under the default policy.
func TestMethodLimits(t *testing.T) {
	b := outcome{codes.ResourceExhausted, denial{20e9, "rpc", "rate limit \"default\" (3/min) exceeded"}, "20000"}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			a := outcome{codes.ResourceExhausted, denial{60e9, "rpc", fmt.Sprintf("rate limit %q (1/min) exceeded", k.method("A"))}, "60000"}
			l, _ := newLimiter(t)
			run(t, k, l, []step{{"A", allowed}, {"A", a}, {"B", allowed}, {"B", allowed}, {"B", allowed}, {"B", b}},
				grpcmw.WithMethodLimits(map[string]ratelimit.Limit{k.method("A"): ratelimit.PerMinute(1)},
					ratelimit.PerMinute(3)))
		})
	}
}

// A call of A costs 2 of a burst of 3: the second finds one token and needs one more, which
// comes back in 20 s. A call of B costs 5, more than the burst: it can never pass, so there
// is no retry delay and the pushback tells clients not to retry.
func TestCost(t *testing.T) {
	a := outcome{codes.ResourceExhausted, denial{20e9, "rpc", "rate limit \"default\" (3/min) exceeded"}, "20000"}
	b := outcome{codes.ResourceExhausted, denial{0, "rpc", "cost exceeds the burst of rate limit 3/min"}, "-1"}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			l, _ := newLimiter(t)
			var reported []error
			run(t, k, l, []step{{"A", allowed}, {"A", a}, {"B", b}, {"B", b}},
				grpcmw.WithLimit(ratelimit.PerMinute(3)),
				// failing open, the default, and still denied
				grpcmw.WithErrorHandler(func(_ context.Context, _ string, err error) error {
					reported = append(reported, err)
					return nil
				}),
				grpcmw.WithCostFunc(func(_ context.Context, fullMethod string) int {
					if fullMethod == k.method("A") {
						return 2
					}
					return 5
				}))
			require.Len(t, reported, 2)
			assert.ErrorIs(t, reported[0], ratelimit.ErrExceedsBurst)
		})
	}
}

// Skipped calls are not charged: A is never limited, B is.
func TestSkip(t *testing.T) {
	b := outcome{codes.ResourceExhausted, denial{60e9, "rpc", "rate limit \"default\" (1/min) exceeded"}, "60000"}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			l, _ := newLimiter(t)
			run(t, k, l, []step{{"A", allowed}, {"A", allowed}, {"A", allowed}, {"B", allowed}, {"B", b}},
				grpcmw.WithLimit(ratelimit.PerMinute(1)),
				grpcmw.WithSkipFunc(func(_ context.Context, fullMethod string) bool { return fullMethod == k.method("A") }))
		})
	}
}

// A limit function returning the zero Limit leaves a call unlimited.
func TestZeroLimitMeansUnlimited(t *testing.T) {
	b := outcome{codes.ResourceExhausted, denial{60e9, "rpc", "rate limit \"default\" (1/min) exceeded"}, "60000"}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			l, _ := newLimiter(t)
			run(t, k, l, []step{{"A", allowed}, {"A", allowed}, {"B", allowed}, {"B", b}},
				grpcmw.WithLimitFunc(func(_ context.Context, fullMethod string) ratelimit.Limit {
					if fullMethod == k.method("A") {
						return ratelimit.Limit{}
					}
					return ratelimit.PerMinute(1)
				}))
		})
	}
}

// Policies own their buckets: two methods with the same limit and the same key (one user)
// keep a bucket each.
func TestMethodsKeepTheirBuckets(t *testing.T) {
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			l, _ := newLimiter(t)
			denyA := outcome{codes.ResourceExhausted, denial{60e9, "user", fmt.Sprintf("rate limit %q (1/min) exceeded", k.method("A"))}, "60000"}
			run(t, k, l, []step{{"A", allowed}, {"B", allowed}, {"A", denyA}},
				grpcmw.WithMethodLimits(map[string]ratelimit.Limit{
					k.method("A"): ratelimit.PerMinute(1), k.method("B"): ratelimit.PerMinute(1),
				}, ratelimit.Limit{}),
				grpcmw.WithKeyFunc(func(context.Context, string) (string, error) { return "user:42", nil }))
		})
	}
}
