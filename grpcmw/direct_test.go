package grpcmw_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/keyfuncs/grpckeys"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

const method = "/test.Echo/A"

// The interceptor called directly, as go-grpc-middleware tests do: the PerMinute(2)
// timeline, with the handler's runs counted and the trailer recorded.
func TestUnaryServerDirect(t *testing.T) {
	l, _ := newLimiter(t)
	icpt := grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(2)),
		grpcmw.WithHeaderStyle(headers.StyleNone))
	var runs int
	for range 2 {
		md, err := direct(context.Background(), icpt, method, unaryOK(&runs))
		require.NoError(t, err)
		assert.Nil(t, md, "no metadata with StyleNone")
	}
	md, err := direct(context.Background(), icpt, method, unaryOK(&runs))
	assert.Equal(t, 2, runs)
	assert.Equal(t, outcome{codes.ResourceExhausted, denial{30 * time.Second, "rpc", "rate limit \"default\" (2/min) exceeded"}, "30000"},
		outcomeOf(t, md, err))
	assert.Equal(t, metadata.Pairs(grpcmw.PushbackKey, "30000", "retry-after", "30"), md, "StyleNone keeps retry-after, as HTTP does")

	// Without a server stream in the context there is nowhere to send the trailer; the
	// denial still stands.
	_, err = icpt(context.Background(), "req", &grpc.UnaryServerInfo{FullMethod: method}, unaryOK(&runs))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
}

// The retry delay is RetryAfter rounded up to the millisecond, and at least 1 ms; the
// pushback is the same number of milliseconds.
func TestRetryDelayRounding(t *testing.T) {
	tests := []struct {
		retryAfter time.Duration
		want       time.Duration
		pushback   string
	}{
		// a denial always has a positive RetryAfter; a client told 0 would retry at once
		{0, time.Millisecond, "1"},
		{time.Nanosecond, time.Millisecond, "1"},
		{time.Millisecond, time.Millisecond, "1"},
		{1500 * time.Microsecond, 2 * time.Millisecond, "2"},
		{time.Second + time.Nanosecond, time.Second + time.Millisecond, "1001"},
		{30 * time.Second, 30 * time.Second, "30000"},
		{24 * time.Hour, 24 * time.Hour, "86400000"},
	}
	for _, tt := range tests {
		t.Run(tt.retryAfter.String(), func(t *testing.T) {
			icpt := grpcmw.UnaryServerInterceptor(&ratelimittest.Stub{Result: ratelimit.Result{RetryAfter: tt.retryAfter}},
				grpcmw.WithLimit(ratelimit.PerSecond(1)))
			md, err := direct(context.Background(), icpt, method, unaryOK(new(int)))
			o := outcomeOf(t, md, err)
			assert.Equal(t, tt.want, o.denial.retryDelay)
			assert.Equal(t, tt.pushback, o.pushback)
			d, ok := grpcmw.RetryDelay(err)
			assert.True(t, ok)
			assert.Equal(t, tt.want, d)
		})
	}
	_, ok := grpcmw.RetryDelay(errors.New("plain"))
	assert.False(t, ok)
	_, ok = grpcmw.RetryDelay(status.Error(codes.ResourceExhausted, "no details"))
	assert.False(t, ok)
}

type userKey struct{}

// The QuotaFailure subject is the kind of key, never its value.
func TestQuotaFailureSubject(t *testing.T) {
	tests := []struct {
		name string
		key  func(context.Context, string) (string, error)
		want string
	}{
		{"default", nil, "rpc"},
		{"peer ip", func(context.Context, string) (string, error) { return "ip:192.0.2.7", nil }, "ip"},
		{"composed", grpckeys.Compose(grpckeys.ContextValue("user", userKey{}), grpckeys.FullMethod()), "user|rpc"},
		{"metadata", grpckeys.Metadata("X-API-Key"), "x-api-key"},
		{"hashed", grpckeys.Hashed([]byte("k"), grpckeys.FullMethod()), "h"},
		{"no label", func(context.Context, string) (string, error) { return "alice", nil }, "key"},
		{"value-like label", func(context.Context, string) (string, error) { return "Alice@example.com:1", nil }, "key"},
		{"long label", func(context.Context, string) (string, error) { return "abcdefghijklmnopqrstuvwxyz0123456789:1", nil }, "key"},
		{"unkeyed", grpckeys.Metadata("x-missing"), "unkeyed"},
	}
	ctx := metadata.NewIncomingContext(context.WithValue(context.Background(), userKey{}, "u42"),
		metadata.Pairs("x-api-key", "secret"))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			icpt := grpcmw.UnaryServerInterceptor(&ratelimittest.Stub{Result: ratelimit.Result{RetryAfter: time.Second}},
				grpcmw.WithLimit(ratelimit.PerSecond(1)), grpcmw.WithKeyFunc(tt.key),
				grpcmw.WithErrorHandler(func(context.Context, string, error) error { return nil }))
			md, err := direct(ctx, icpt, method, unaryOK(new(int)))
			assert.Equal(t, tt.want, outcomeOf(t, md, err).denial.subject)
		})
	}
}

// WithHeaderStyle adds the fields of package headers to the trailer, in lower case, on allowed
// and denied calls alike.
func TestMetadata(t *testing.T) {
	tests := []struct {
		style   headers.Style
		allowed metadata.MD
		denied  metadata.MD
	}{
		{headers.StyleXRateLimit,
			metadata.Pairs("x-ratelimit-limit", "2", "x-ratelimit-remaining", "1", "x-ratelimit-reset", "30"),
			metadata.Pairs("retry-after", "30", "x-ratelimit-limit", "2", "x-ratelimit-remaining", "0",
				"x-ratelimit-reset", "60", grpcmw.PushbackKey, "30000")},
		{headers.StyleIETF,
			metadata.Pairs("ratelimit-policy", `"api";q=2;w=60`, "ratelimit", `"api";r=1;t=30`),
			metadata.Pairs("retry-after", "30", "ratelimit-policy", `"api";q=2;w=60`, "ratelimit", `"api";r=0;t=30`,
				grpcmw.PushbackKey, "30000")},
		{headers.StyleNone, metadata.MD{}, metadata.Pairs("retry-after", "30", grpcmw.PushbackKey, "30000")},
	}
	for _, tt := range tests {
		t.Run(tt.style.String(), func(t *testing.T) {
			l, _ := newLimiter(t)
			icpt := grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(2)),
				grpcmw.WithHeaderStyle(tt.style), grpcmw.WithPolicyName("api"))
			md, err := direct(context.Background(), icpt, method, unaryOK(new(int)))
			require.NoError(t, err)
			if len(tt.allowed) == 0 {
				assert.Empty(t, md)
			} else {
				assert.Equal(t, tt.allowed, md)
			}
			_, err = direct(context.Background(), icpt, method, unaryOK(new(int)))
			require.NoError(t, err)
			md, err = direct(context.Background(), icpt, method, unaryOK(new(int)))
			assert.Equal(t, codes.ResourceExhausted, status.Code(err))
			assert.Equal(t, tt.denied, md)
		})
	}
}

// A shaping limiter's Delay holds the call; a call whose context ends meanwhile ends with
// the context's code and never reaches the handler.
func TestDelayHoldsTheCall(t *testing.T) {
	l := &ratelimittest.Stub{Result: ratelimit.Result{Allowed: true, Delay: time.Millisecond}}
	icpt := grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerSecond(1)))
	var runs int
	_, err := direct(context.Background(), icpt, method, unaryOK(&runs))
	require.NoError(t, err)
	assert.Equal(t, 1, runs)

	l.Result.Delay = time.Hour
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = direct(canceled, icpt, method, unaryOK(&runs))
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.Equal(t, 1, runs)
}

func TestConstructorsPanic(t *testing.T) {
	l, _ := newLimiter(t)
	one := grpcmw.WithLimit(ratelimit.PerMinute(1))
	constructors := map[string]func(ratelimit.Limiter, ...grpcmw.Option){
		"UnaryServerInterceptor":  func(l ratelimit.Limiter, o ...grpcmw.Option) { grpcmw.UnaryServerInterceptor(l, o...) },
		"StreamServerInterceptor": func(l ratelimit.Limiter, o ...grpcmw.Option) { grpcmw.StreamServerInterceptor(l, o...) },
		"UnaryClientInterceptor":  func(l ratelimit.Limiter, o ...grpcmw.Option) { grpcmw.UnaryClientInterceptor(l, o...) },
		"StreamClientInterceptor": func(l ratelimit.Limiter, o ...grpcmw.Option) { grpcmw.StreamClientInterceptor(l, o...) },
	}
	for name, build := range constructors {
		t.Run(name, func(t *testing.T) {
			p := "grpcmw: " + name + ": "
			assert.PanicsWithValue(t, p+"nil Limiter", func() { build(nil, one) })
			assert.PanicsWithValue(t, p+"no limit configured: pass WithLimit, WithMethodLimits, WithLimitFunc, WithLimits or WithRules",
				func() { build(l) })
			assert.PanicsWithValue(t, p+"no limit configured: pass WithLimit, WithMethodLimits, WithLimitFunc, WithLimits or WithRules",
				func() { build(l, grpcmw.WithLimitFunc(nil)) })
			assert.PanicsWithValue(t, p+"WithLimit(0/s burst 5): ratelimit: invalid limit: rate 0 is not a finite number greater than zero",
				func() { build(l, grpcmw.WithLimit(ratelimit.Limit{Burst: 5})) })
			assert.PanicsWithValue(t, p+"WithMethodLimits: /a.B/C: 1/s burst 0: ratelimit: invalid limit: burst 0 is less than 1",
				func() {
					build(l, grpcmw.WithMethodLimits(map[string]ratelimit.Limit{"/a.B/C": {Rate: 1}}, ratelimit.Limit{}))
				})
			// A table's default may be the zero Limit ("other methods are not limited");
			// an entry may not, nor WithLimit: a fixed zero is a missing number.
			assert.NotPanics(t, func() {
				build(l, grpcmw.WithMethodLimits(map[string]ratelimit.Limit{"/a.B/C": ratelimit.PerMinute(1)}, ratelimit.Limit{}))
			})
			assert.Panics(t, func() {
				build(l, grpcmw.WithMethodLimits(map[string]ratelimit.Limit{"/a.B/C": {}}, ratelimit.PerMinute(1)))
			})
			assert.Panics(t, func() { build(l, grpcmw.WithLimit(ratelimit.PerMinute(0))) })
			// Two limit options conflict: neither silently wins.
			assert.PanicsWithValue(t, "grpcmw: "+name+": WithLimit and WithLimitFunc both give the limits: pass one of them",
				func() {
					build(l, grpcmw.WithLimit(ratelimit.Limit{Burst: 5}),
						grpcmw.WithLimitFunc(func(context.Context, string) ratelimit.Limit { return ratelimit.PerSecond(1) }))
				})
		})
	}
	assert.PanicsWithValue(t, "grpcmw: StreamServerInterceptor: WithPerMessage and WithRefundIf: a stream charged per message cannot be refunded; pass one of them",
		func() {
			grpcmw.StreamServerInterceptor(l, one, grpcmw.WithPerMessage(),
				grpcmw.WithRefundIf(func(context.Context, string, error) bool { return true }))
		})
	assert.PanicsWithValue(t, "grpcmw: UnaryServerInterceptor: nil Limiter",
		func() { grpcmw.UnaryServerInterceptor((*local.Limiter)(nil), one) })
	cost := grpcmw.WithCostFunc(func(context.Context, string) int { return 1 })
	assert.PanicsWithValue(t, "grpcmw: UnaryClientInterceptor: WithWait and WithCostFunc cannot be combined: Limiter.Wait takes one token",
		func() { grpcmw.UnaryClientInterceptor(l, one, grpcmw.WithWait(), cost) })
	assert.NotPanics(t, func() { grpcmw.UnaryServerInterceptor(l, one, grpcmw.WithWait(), cost) }, "servers ignore WithWait")
	limits := grpcmw.WithLimits(func(context.Context, string) []ratelimit.Request { return nil })
	assert.PanicsWithValue(t, "grpcmw: StreamClientInterceptor: WithWait and WithLimits cannot be combined: Limiter.Wait takes one limit",
		func() { grpcmw.StreamClientInterceptor(l, limits, grpcmw.WithWait()) })
	assert.PanicsWithValue(t, "grpcmw: UnaryClientInterceptor: WithWait and WithShadow cannot be combined: shadow mode lets every call through at once",
		func() { grpcmw.UnaryClientInterceptor(l, one, grpcmw.WithWait(), grpcmw.WithShadow()) })
}

// A nil Option is skipped, and nil functions mean the defaults.
func TestNilOptions(t *testing.T) {
	l, _ := newLimiter(t)
	icpt := grpcmw.UnaryServerInterceptor(l, nil, grpcmw.WithLimit(ratelimit.PerMinute(1)), grpcmw.WithKeyFunc(nil),
		grpcmw.WithCostFunc(nil), grpcmw.WithSkipFunc(nil), grpcmw.WithDeniedHandler(nil), grpcmw.WithErrorHandler(nil),
		grpcmw.WithLimitFunc(nil), grpcmw.WithPolicyName(""))
	var runs int
	_, err := direct(context.Background(), icpt, method, unaryOK(&runs))
	require.NoError(t, err)
	_, err = direct(context.Background(), icpt, method, unaryOK(&runs))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, 1, runs)
}
