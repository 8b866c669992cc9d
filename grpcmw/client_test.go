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
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/grpcmw"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// With WithWait, calls over the limit wait for their turn instead of failing. The limit is
// 1000/s with a burst of 1, on the real clock, so each wait is about a millisecond.
func TestClientWait(t *testing.T) {
	l := local.New(local.WithCleanupInterval(-1))
	t.Cleanup(func() { _ = l.Close() })
	limit := grpcmw.WithLimit(ratelimit.Limit{Rate: 1000, Burst: 1})
	e := newEnv(t, server{},
		grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(l, limit, grpcmw.WithWait())),
		grpc.WithStreamInterceptor(grpcmw.StreamClientInterceptor(l, limit, grpcmw.WithWait())))
	for range 3 {
		_, err := e.unaryCall(ctx(t), "A")
		require.NoError(t, err)
		_, _, err = e.streamCall(ctx(t), "SA", 1)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(6), e.attempts.Load())
}

// A call whose deadline comes before its turn fails at once, without being sent; so does a
// call whose context has ended.
func TestClientWaitPastDeadline(t *testing.T) {
	l, _ := newLimiter(t) // the clock never moves: no turn ever comes
	e := newEnv(t, server{}, grpc.WithUnaryInterceptor(
		grpcmw.UnaryClientInterceptor(l, grpcmw.WithLimit(ratelimit.PerMinute(1)), grpcmw.WithWait())))
	_, err := e.unaryCall(ctx(t), "A")
	require.NoError(t, err)

	short, cancel := context.WithTimeout(ctx(t), 5*time.Second) // the turn is 60 s away
	defer cancel()
	_, err = e.unaryCall(short, "A")
	assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
	assert.Equal(t, "rate limit: the call's deadline comes before its turn", status.Convert(err).Message())
	assert.NoError(t, short.Err(), "failed at once, not at the deadline")

	canceled, cancel := context.WithCancel(ctx(t))
	cancel()
	_, err = e.unaryCall(canceled, "A")
	assert.Equal(t, codes.Canceled, status.Code(err))
	assert.Equal(t, int64(1), e.attempts.Load())
}

// A limiter that cannot wait (the Redis backend answers ErrNotSupported) is a mistake in the
// program, not a failure: the call is refused, failing open or closed.
func TestClientWaitNotSupported(t *testing.T) {
	for _, closed := range []bool{false, true} {
		t.Run(policyNames[closed], func(t *testing.T) {
			var rec recorder
			l := &ratelimittest.Stub{Err: ratelimit.ErrNotSupported}
			e := newEnv(t, server{}, grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(l,
				withPolicy(closed, grpcmw.WithLimit(ratelimit.PerMinute(1)), grpcmw.WithWait(),
					grpcmw.WithErrorHandler(rec.handle))...)))
			_, err := e.unaryCall(ctx(t), "A")
			assert.Equal(t, codes.Internal, status.Code(err))
			require.Len(t, rec.all(), 1)
			assert.ErrorIs(t, rec.all()[0], ratelimit.ErrNotSupported)
		})
	}
}

// A client-side denial fills the caller's grpc.Trailer as a server's would, and RetryDelay
// reads its delay.
func TestClientDenialTrailer(t *testing.T) {
	l, _ := newLimiter(t)
	e := newEnv(t, server{}, grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(l,
		grpcmw.WithLimit(ratelimit.PerMinute(2)), grpcmw.WithHeaderStyle(headers.StyleXRateLimit))))
	for range 2 {
		md, err := e.unaryCall(ctx(t), "A")
		require.NoError(t, err)
		assert.Empty(t, md, "an allowed call's trailer is the server's")
	}
	md, err := e.unaryCall(ctx(t), "A")
	assert.Equal(t, metadata.Pairs("retry-after", "30", "x-ratelimit-limit", "2", "x-ratelimit-remaining", "0",
		"x-ratelimit-reset", "60", grpcmw.PushbackKey, "30000"), md)
	d, ok := grpcmw.RetryDelay(err)
	assert.True(t, ok)
	assert.Equal(t, 30*time.Second, d)
}

// A client interceptor asks at the priority of WithPriorityFunc, or else at the one the
// caller's context carries, whether it waits (WithWait) or not.
func TestClientPriority(t *testing.T) {
	allowed := ratelimit.Result{Allowed: true, Remaining: 1}
	byMethod := grpcmw.WithPriorityFunc(func(_ context.Context, fullMethod string) priority.Level {
		if fullMethod == "/"+service+"/A" {
			return priority.Sheddable
		}
		return priority.Critical
	})
	for _, wait := range []bool{false, true} {
		l := &ratelimittest.Stub{Result: allowed}
		opts := []grpcmw.Option{grpcmw.WithLimit(ratelimit.PerMinute(10))}
		if wait {
			opts = append(opts, grpcmw.WithWait())
		}
		plain := newEnv(t, server{}, grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(l, opts...)))
		_, err := plain.unaryCall(ctx(t), "A")
		require.NoError(t, err)
		_, err = plain.unaryCall(priority.With(ctx(t), priority.Normal), "A")
		require.NoError(t, err)
		classified := newEnv(t, server{}, grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(l, append(opts, byMethod)...)))
		_, err = classified.unaryCall(ctx(t), "A")
		require.NoError(t, err)
		assert.Equal(t, []priority.Level{priority.Critical, priority.Normal, priority.Sheddable}, l.Priorities(),
			"wait %t", wait)
	}
}

// decisions is an Observer that keeps the decisions it is told of.
type decisions struct {
	mu   sync.Mutex
	seen []observe.Decision
}

func (o *decisions) ObserveDecision(_ context.Context, d observe.Decision) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d.Duration, d.Err = 0, nil // when it took, and the error behind its kind, are not compared
	o.seen = append(o.seen, d)
}

// A waiting client's calls are decisions like a deciding client's, told to its observer
// (each timed to its admission): allowed; denied when the turn comes after the deadline;
// an error when the caller gave up. The clock never moves: one turn in a minute.
func TestClientWaitObserved(t *testing.T) {
	l, _ := newLimiter(t)
	var waiting, deciding decisions
	limit := ratelimit.PerMinute(1)
	e := newEnv(t, server{}, grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(l,
		grpcmw.WithLimit(limit), grpcmw.WithWait(), grpcmw.WithObserver(&waiting))))
	_, err := e.unaryCall(ctx(t), "A")
	require.NoError(t, err)
	short, cancel := context.WithTimeout(ctx(t), 5*time.Second) // the turn is 60 s away
	defer cancel()
	_, err = e.unaryCall(short, "A")
	require.Equal(t, codes.DeadlineExceeded, status.Code(err))
	canceled, cancel := context.WithCancel(ctx(t))
	cancel()
	_, err = e.unaryCall(canceled, "A")
	require.Equal(t, codes.Canceled, status.Code(err))

	// The same call decided, not waited for, on another bucket of its own: its report is
	// the one a wait's must match, Remaining aside (a wait does not say it).
	other, _ := newLimiter(t)
	d := newEnv(t, server{}, grpc.WithUnaryInterceptor(grpcmw.UnaryClientInterceptor(other,
		grpcmw.WithLimit(limit), grpcmw.WithObserver(&deciding))))
	_, err = d.unaryCall(ctx(t), "A")
	require.NoError(t, err)
	require.Len(t, deciding.seen, 1)
	allowed := deciding.seen[0]
	assert.Equal(t, observe.OutcomeAllowed, allowed.Outcome)
	allowed.Remaining = 0
	denied, failed := allowed, allowed
	denied.Outcome = observe.OutcomeDenied
	failed.Outcome, failed.ErrorKind = observe.OutcomeError, observe.KindCanceled
	assert.Equal(t, []observe.Decision{allowed, denied, failed}, waiting.seen)
}
