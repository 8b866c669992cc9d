package grpcmw_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/headers"
)

// retryConfig is a client service config that retries RESOURCE_EXHAUSTED up to 3 attempts
// with a backoff of about 1 ms, so that any longer spacing between attempts comes from the
// server's pushback.
const retryConfig = `{"methodConfig": [{
	"name": [{"service": "test.Echo"}],
	"retryPolicy": {
		"maxAttempts": 3,
		"initialBackoff": "0.001s",
		"maxBackoff": "0.001s",
		"backoffMultiplier": 1,
		"retryableStatusCodes": ["RESOURCE_EXHAUSTED"]
	}
}]}`

// attemptLog records when each attempt reached the server.
type attemptLog struct {
	mu    sync.Mutex
	times []time.Time
}

func (a *attemptLog) add() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.times = append(a.times, time.Now())
}

// since returns the attempts from the i-th on.
func (a *attemptLog) since(i int) []time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]time.Time(nil), a.times[i:]...)
}

// retryEnv starts a server whose limiter interceptor is icpt, behind one that logs each
// attempt and calls onDenied (if not nil) after a ResourceExhausted, and a client with
// retryConfig.
func retryEnv(t *testing.T, icpt grpc.UnaryServerInterceptor, onDenied func()) (*env, *attemptLog) {
	log := &attemptLog{}
	logged := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		log.add()
		resp, err := icpt(ctx, req, info, h)
		if onDenied != nil && status.Code(err) == codes.ResourceExhausted {
			onDenied()
		}
		return resp, err
	}
	return newEnv(t, server{unary: logged}, grpc.WithDefaultServiceConfig(retryConfig)), log
}

// requireSpaced checks that consecutive attempts are at least d apart. Timers never fire
// early, so this holds however loaded the machine; without the pushback the gaps would be
// about 1 ms.
func requireSpaced(t *testing.T, times []time.Time, d time.Duration) {
	t.Helper()
	for i := 1; i < len(times); i++ {
		assert.GreaterOrEqual(t, times[i].Sub(times[i-1]), d, "gap before attempt %d", i+1)
	}
}

// Rate 40/s, burst 1: once the token is taken, a denial's pushback is 25 ms. The server's
// clock stands still, so every retry is denied again, each 25 ms after the one before,
// until the client's 3 attempts are spent. The rate-limit metadata does not stop the
// retries: it travels in the trailer.
func TestRetryHonoursPushback(t *testing.T) {
	l, _ := newLimiter(t)
	e, log := retryEnv(t, grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimit(ratelimit.Limit{Rate: 40, Burst: 1}),
		grpcmw.WithHeaderStyle(headers.StyleBoth)), nil)
	_, err := e.unaryCall(ctx(t), "A")
	require.NoError(t, err)

	md, err := e.unaryCall(ctx(t), "A")
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, []string{"25"}, md.Get(grpcmw.PushbackKey))
	times := log.since(1)
	require.Len(t, times, 3, "all three attempts reached the server")
	requireSpaced(t, times, 25*time.Millisecond)
	assert.Equal(t, int64(1), e.handled.Load())
}

// The same, but the server's clock moves on by the pushback after the first denial: the
// retry, sent no sooner than the pushback said, is allowed.
func TestRetryAfterPushbackSucceeds(t *testing.T) {
	l, clock := newLimiter(t)
	e, log := retryEnv(t, grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimit(ratelimit.Limit{Rate: 40, Burst: 1})),
		func() { clock.Advance(25 * time.Millisecond) })
	_, err := e.unaryCall(ctx(t), "A")
	require.NoError(t, err)

	_, err = e.unaryCall(ctx(t), "A")
	require.NoError(t, err)
	times := log.since(1)
	require.Len(t, times, 2, "denied once, allowed on the retry")
	requireSpaced(t, times, 25*time.Millisecond)
	assert.Equal(t, int64(2), e.handled.Load())
}

// PerMinute(1): the pushback is 60 s, far past the call's 500 ms deadline, so the client
// does not retry before the deadline ends the call.
func TestRetryPushbackPastDeadline(t *testing.T) {
	l, _ := newLimiter(t)
	e, log := retryEnv(t, grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(1))), nil)
	_, err := e.unaryCall(ctx(t), "A")
	require.NoError(t, err)

	short, cancel := context.WithTimeout(ctx(t), 500*time.Millisecond)
	defer cancel()
	_, err = e.unaryCall(short, "A")
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	assert.Len(t, log.since(1), 1, "no retry reached the server")
}

// A cost above the burst can never pass: the pushback of -1 tells the client not to retry.
func TestRetryNeverForCostAboveBurst(t *testing.T) {
	l, _ := newLimiter(t)
	e, log := retryEnv(t, grpcmw.UnaryServerInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(1)),
		grpcmw.WithCostFunc(func(context.Context, string) int { return 2 }),
		grpcmw.WithErrorHandler(func(context.Context, string, error) error { return nil })), nil)
	md, err := e.unaryCall(ctx(t), "A")
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, []string{"-1"}, md.Get(grpcmw.PushbackKey))
	assert.Len(t, log.since(0), 1)
}

// The control: a ResourceExhausted without a pushback is retried on the client's own ~1 ms
// backoff, so the spacing seen above is the pushback's doing.
func TestRetryWithoutPushback(t *testing.T) {
	deny := func(context.Context, any, *grpc.UnaryServerInfo, grpc.UnaryHandler) (any, error) {
		return nil, status.Error(codes.ResourceExhausted, "no pushback")
	}
	e, log := retryEnv(t, deny, nil)
	_, err := e.unaryCall(ctx(t), "A")
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Len(t, log.since(0), 3)
}
