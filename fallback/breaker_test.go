package fallback_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// rig is a fallback Limiter on a switched primary and a local secondary, all on one clock
// that moves only when the test says, with hooks recorded.
type rig struct {
	l         *fallback.Limiter
	primary   *switched
	secondary *local.Limiter
	clock     *ratelimittest.Clock
	hooks     *recorder
}

func newRig(t *testing.T, opts ...fallback.Option) *rig {
	t.Helper()
	clock := ratelimittest.NewClock()
	r := &rig{primary: newSwitched(t, clock), secondary: newLocal(t, clock), clock: clock, hooks: &recorder{}}
	opts = append([]fallback.Option{
		fallback.WithClock(clock.Now),
		fallback.WithStateHook(r.hooks.state),
		fallback.WithErrorHandler(r.hooks.err),
	}, opts...)
	r.l = fallback.New(r.primary, r.secondary, opts...)
	return r
}

// allow calls Allow on key "k" and requires no error.
func (r *rig) allow(t *testing.T, limit ratelimit.Limit) ratelimit.Result {
	t.Helper()
	res, err := r.l.Allow(context.Background(), "k", limit)
	require.NoError(t, err)
	return res
}

var roomy = ratelimit.Limit{Rate: 1, Burst: 100}

const (
	opened    = "circuit breaker closed → open (degraded): distributed: connection refused"
	halfOpen  = "circuit breaker open → half-open (degraded)"
	reopened  = "circuit breaker half-open → open (degraded): distributed: connection refused"
	recovered = "circuit breaker half-open → closed (recovered)"
	failed    = "k: distributed: connection refused"
)

// TestBreakerTimeline: five failures open the breaker; the primary then rests for exactly
// the cooldown; a failed probe reopens it for another cooldown, a good one closes it.
func TestBreakerTimeline(t *testing.T) {
	r := newRig(t)
	r.primary.fail(nil)
	for i := range 5 {
		// Each failed call is decided by the secondary: its bucket loses one token each time.
		res := r.allow(t, roomy)
		require.Equal(t, ratelimit.Result{Allowed: true, Limit: roomy, Remaining: 99 - i, ResetAfter: time.Duration(i+1) * time.Second,
			Charge: ratelimit.Charge{At: r.clock.Now(), Part: "secondary"}}, res)
		require.Equal(t, int64(i+1), r.primary.calls.Load())
	}
	require.Equal(t, fallback.Open, r.l.State())
	changes, errs := r.hooks.seen()
	require.Equal(t, []string{opened}, changes)
	require.Equal(t, []string{failed, failed, failed, failed, failed}, errs)

	// Open: the secondary decides, the primary is not asked, nothing more is reported.
	for range 10 {
		require.True(t, r.allow(t, roomy).Allowed)
	}
	r.clock.Advance(fallback.DefaultCooldown - time.Nanosecond)
	require.True(t, r.allow(t, roomy).Allowed)
	require.Equal(t, int64(5), r.primary.calls.Load())

	// The cooldown is over: the next call probes the primary, which still fails.
	r.clock.Advance(time.Nanosecond)
	require.True(t, r.allow(t, roomy).Allowed)
	require.Equal(t, int64(6), r.primary.calls.Load())
	require.Equal(t, fallback.Open, r.l.State())
	r.clock.Advance(fallback.DefaultCooldown - time.Nanosecond)
	r.allow(t, roomy)
	require.Equal(t, int64(6), r.primary.calls.Load(), "the failed probe started a new cooldown")

	// The primary is back: the next probe closes the breaker, and the primary decides
	// (its own bucket, untouched until now, is full).
	r.primary.down.Store(false)
	r.clock.Advance(time.Nanosecond)
	require.Equal(t, 99, r.allow(t, roomy).Remaining)
	require.Equal(t, fallback.Closed, r.l.State())
	require.Equal(t, 98, r.allow(t, roomy).Remaining)
	require.Equal(t, int64(8), r.primary.calls.Load())

	changes, errs = r.hooks.seen()
	require.Equal(t, []string{opened, halfOpen, reopened, halfOpen, recovered}, changes)
	require.Len(t, errs, 6) // five failures and the failed probe
}

// TestBreakerNeedsARun: a success between failures starts the count again.
func TestBreakerNeedsARun(t *testing.T) {
	r := newRig(t)
	for range 3 {
		r.primary.down.Store(true)
		for range 4 {
			r.allow(t, roomy)
		}
		r.primary.down.Store(false)
		r.allow(t, roomy)
	}
	require.Equal(t, fallback.Closed, r.l.State())
	r.primary.down.Store(true)
	for range 5 {
		r.allow(t, roomy)
	}
	require.Equal(t, fallback.Open, r.l.State())
}

// TestBreakerOff: with a negative threshold, every call tries the primary however often it
// fails.
func TestBreakerOff(t *testing.T) {
	r := newRig(t, fallback.WithFailureThreshold(-1))
	r.primary.fail(nil)
	for range 50 {
		require.True(t, r.allow(t, roomy).Allowed)
	}
	require.Equal(t, int64(50), r.primary.calls.Load())
	require.Equal(t, fallback.Closed, r.l.State())
	changes, errs := r.hooks.seen()
	require.Empty(t, changes)
	require.Len(t, errs, 50)
}

// TestZeroThresholdIsTheDefault: zero means the default, five failures in a row.
func TestZeroThresholdIsTheDefault(t *testing.T) {
	r := newRig(t, fallback.WithFailureThreshold(0))
	r.primary.fail(nil)
	for range fallback.DefaultFailureThreshold - 1 {
		r.allow(t, roomy)
	}
	require.Equal(t, fallback.Closed, r.l.State())
	r.allow(t, roomy)
	require.Equal(t, fallback.Open, r.l.State())
}

// TestLongestCooldown: a cooldown too long for the breaker's clock keeps it open; it must
// not wrap around to the past and probe on every call.
func TestLongestCooldown(t *testing.T) {
	r := newRig(t, fallback.WithCooldown(math.MaxInt64))
	r.primary.fail(nil)
	for range fallback.DefaultFailureThreshold {
		r.allow(t, roomy)
	}
	r.clock.Advance(time.Hour)
	for range 10 {
		r.allow(t, roomy)
	}
	require.Equal(t, int64(fallback.DefaultFailureThreshold), r.primary.calls.Load())
	require.Equal(t, fallback.Open, r.l.State())
}

// TestAnswersAreNotFailures: errors about the arguments or one bucket, and the end of the
// caller's own context, are returned as they are, neither counted nor decided again by the
// secondary. A client sending calls with deadlines too short for any backend must not open
// the breaker for everyone.
func TestAnswersAreNotFailures(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancelExpired := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancelExpired()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
	}{
		{"InvalidLimit", context.Background(), fmt.Errorf("%w: rate above the backend's maximum", ratelimit.ErrInvalidArgument)},
		{"NotSupported", context.Background(), fmt.Errorf("%w: algorithm", ratelimit.ErrNotSupported)},
		{"ExceedsBurst", context.Background(), ratelimit.ErrExceedsBurst},
		{"Closed", context.Background(), ratelimit.ErrClosed},
		{"InvalidState", context.Background(), fmt.Errorf("distributed: %w", ratelimit.ErrInvalidState)},
		{"KeyTooLong", context.Background(), ratelimit.ErrInvalidArgument},
		// Refusals of a list of limits, about the arguments too: six cross-slot refusals
		// must not open the breaker for every key while Redis is healthy.
		{"InvalidRequest", context.Background(), fmt.Errorf("%w: entry 1 repeats entry 0", ratelimit.ErrInvalidArgument)},
		{"CrossSlot", context.Background(), fmt.Errorf("distributed: AllowAll: %w: 2 slots", distributed.ErrCrossSlot)},
		{"CallerCanceled", canceled, fmt.Errorf("distributed: %w", context.Canceled)},
		{"CallerDeadline", expired, fmt.Errorf("distributed: %w", context.DeadlineExceeded)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			r.primary.fail(tt.err)
			for range 10 {
				res, err := r.l.Allow(tt.ctx, "k", roomy)
				require.ErrorIs(t, err, tt.err)
				require.Equal(t, ratelimit.Result{Limit: roomy}, res)
			}
			require.Equal(t, fallback.Closed, r.l.State())
			changes, errs := r.hooks.seen()
			require.Empty(t, changes)
			require.Empty(t, errs)
			// The secondary was never asked: its bucket is full.
			res, err := r.secondary.Allow(context.Background(), "k", roomy)
			require.NoError(t, err)
			require.Equal(t, 99, res.Remaining)
		})
	}
}

// TestPrimaryDeadlineIsAFailure: the primary's own deadline, passed while the caller's
// context lives on, counts.
func TestPrimaryDeadlineIsAFailure(t *testing.T) {
	r := newRig(t)
	r.primary.fail(fmt.Errorf("distributed: %w (%w)", ratelimit.ErrTimeout, context.DeadlineExceeded))
	for range 5 {
		require.True(t, r.allow(t, roomy).Allowed)
	}
	require.Equal(t, fallback.Open, r.l.State())
}

// TestOneProbe: while the probe is out, every other call goes to the secondary; a probe that
// does not come back within a cooldown is handed on, and only the probe in charge closes
// the breaker.
func TestOneProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		r.primary.fail(nil)
		for range 5 {
			r.allow(t, roomy)
		}
		r.primary.down.Store(false)
		release := r.primary.hang()
		r.clock.Advance(fallback.DefaultCooldown)

		first := make(chan ratelimit.Result)
		go func() { first <- r.allow(t, roomy) }()
		synctest.Wait() // the probe is held by the primary
		require.Equal(t, fallback.HalfOpen, r.l.State())
		for range 10 {
			require.True(t, r.allow(t, roomy).Allowed)
		}
		require.Equal(t, int64(6), r.primary.calls.Load())

		// A cooldown later the probe has not come back: the next call takes over.
		r.clock.Advance(fallback.DefaultCooldown)
		second := make(chan ratelimit.Result)
		go func() { second <- r.allow(t, roomy) }()
		synctest.Wait()
		require.Equal(t, int64(7), r.primary.calls.Load())

		release()
		require.True(t, (<-first).Allowed)
		require.True(t, (<-second).Allowed)
		require.Equal(t, fallback.Closed, r.l.State())
		changes, _ := r.hooks.seen()
		require.Equal(t, []string{opened, halfOpen, recovered}, changes)
	})
}

// TestInconclusiveProbe: a probe answered with an error about its arguments hands the
// probe on to the next call at once.
func TestInconclusiveProbe(t *testing.T) {
	r := newRig(t)
	r.primary.fail(nil)
	for range 5 {
		r.allow(t, roomy)
	}
	r.clock.Advance(fallback.DefaultCooldown)
	r.primary.fail(ratelimit.ErrNotSupported)
	_, err := r.l.Allow(context.Background(), "k", roomy)
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	require.Equal(t, fallback.HalfOpen, r.l.State())

	r.primary.down.Store(false)
	require.Equal(t, 99, r.allow(t, roomy).Remaining) // the primary's bucket: it was asked
	require.Equal(t, fallback.Closed, r.l.State())
}

// TestNoSecondary: without a secondary, failures and the open breaker are errors wrapping
// ErrUnavailable, with the Result every backend returns with an error.
func TestNoSecondary(t *testing.T) {
	clock := ratelimittest.NewClock()
	primary := newSwitched(t, clock)
	l := fallback.New(primary, nil, fallback.WithClock(clock.Now))
	primary.fail(nil)
	ctx := context.Background()
	for i := range 8 {
		res, err := l.Allow(ctx, "k", roomy)
		require.ErrorIs(t, err, fallback.ErrUnavailable)
		require.Equal(t, ratelimit.Result{Limit: roomy}, res)
		if i < 5 {
			require.ErrorIs(t, err, errDown, "call %d: the primary's own error", i)
		} else {
			require.EqualError(t, err, "fallback: primary limiter unavailable: circuit breaker open")
		}
	}
	require.Equal(t, int64(5), primary.calls.Load())
	require.ErrorIs(t, l.Wait(ctx, "k", roomy), fallback.ErrUnavailable)
}
