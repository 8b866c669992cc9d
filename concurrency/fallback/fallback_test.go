package fallback_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/fallback"
	"github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/internal/args"
)

const (
	opened    = "circuit breaker closed → open (degraded): distributed: connection refused"
	halfOpen  = "circuit breaker open → half-open (degraded)"
	reopened  = "circuit breaker half-open → open (degraded): distributed: connection refused"
	recovered = "circuit breaker half-open → closed (recovered)"
)

// TestOutage follows one outage on a fake clock: max 10 shared by 4 instances, a breaker
// opening after 2 failures. The secondary grants exactly this instance's share, 10/4 = 2;
// each permit goes back to the limiter that granted it, whatever the breaker's state then;
// the first probe after the primary is back closes the breaker.
func TestOutage(t *testing.T) {
	r := newRig(t, fallback.WithInstances(4), fallback.WithFailureThreshold(2))
	inFlight := func() (primary, secondary int) {
		return r.primary.Stats().InFlight, r.secondary.Stats().InFlight
	}

	// t0: up. Three permits from the primary.
	p1, p2, p3 := r.take(t, 10), r.take(t, 10), r.take(t, 10)
	assertInFlight(t, inFlight, 3, 0)

	// The primary goes down. The first two failures are answered by the secondary, and the
	// second opens the breaker; the secondary's share (2) is then full, and the third call
	// does not reach the primary.
	r.primary.fail(errDown)
	s1, s2 := r.take(t, 10), r.take(t, 10)
	assert.False(t, r.free(t, 10), "the share of 2 is full")
	assert.Equal(t, 2+3, r.primary.called(), "3 calls up, 2 down, none while open")
	assert.Equal(t, fallback.Open, r.l.State())
	assertInFlight(t, inFlight, 3, 2)

	// A permit of the primary, released while the breaker is open, goes to the primary.
	p1.Release()
	assertInFlight(t, inFlight, 2, 2)

	// t0+250ms: the cooldown ends; the probe fails, the breaker reopens, the secondary
	// answers (still full).
	r.clock.Advance(fallback.DefaultCooldown)
	assert.False(t, r.free(t, 10))
	assert.Equal(t, fallback.Open, r.l.State())

	// The primary comes back. t0+500ms: the probe succeeds and closes the breaker; its
	// permit is the primary's.
	r.primary.fail(nil)
	r.clock.Advance(fallback.DefaultCooldown)
	p4 := r.take(t, 10)
	assert.Equal(t, fallback.Closed, r.l.State())
	assertInFlight(t, inFlight, 3, 2)

	// The secondary's permits, released after recovery, go to the secondary.
	s1.Release()
	s2.Release()
	assertInFlight(t, inFlight, 3, 0)
	for _, p := range []concurrency.Permit{p2, p3, p4} {
		p.Release()
	}
	assertInFlight(t, inFlight, 0, 0)

	changes, errs := r.hooks.seen()
	assert.Equal(t, []string{opened, halfOpen, reopened, halfOpen, recovered}, changes)
	assert.Equal(t, []string{
		"k: distributed: connection refused", // the failures the secondary answered
		"k: distributed: connection refused",
		"k: distributed: connection refused", // the failed probe
	}, errs)
}

func assertInFlight(t *testing.T, inFlight func() (int, int), primary, secondary int) {
	t.Helper()
	p, s := inFlight()
	assert.Equal(t, [2]int{primary, secondary}, [2]int{p, s}, "permits held by [primary, secondary]")
}

// TestShare: the secondary's max is max/instances, rounded down, at least 1.
func TestShare(t *testing.T) {
	for _, tc := range []struct {
		instances, max, want int
	}{
		{instances: 0, max: 10, want: 10}, // zero means the default, 1
		{instances: 1, max: 10, want: 10},
		{instances: 4, max: 10, want: 2},
		{instances: 3, max: 10, want: 3},
		{instances: 4, max: 3, want: 1}, // 3/4 rounds down to 0: at least 1
		{instances: 100, max: 1, want: 1},
	} {
		t.Run(fmt.Sprintf("%d of %d", tc.max, tc.instances), func(t *testing.T) {
			r := newRig(t, fallback.WithInstances(tc.instances), fallback.WithFailureThreshold(-1))
			r.primary.fail(errDown)
			for range tc.want {
				r.take(t, tc.max)
			}
			assert.False(t, r.free(t, tc.max))
		})
	}
}

// TestAnswersAreNotFailures: the primary's refusals for lack of capacity, the ends of
// callers' contexts, and its errors about itself or the arguments never open the breaker
// (whose threshold here is 1) and are returned as they are; its timeouts and client errors
// open it, and the secondary answers.
func TestAnswersAreNotFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		call    func(t *testing.T, r *rig) error // makes the primary answer as named
		want    error
		failure bool
	}{
		{"queue full", func(t *testing.T, r *rig) error {
			// The primary's queue of 1 is taken by a waiter: the next Acquire is refused.
			hold := r.take(t, 1)
			defer hold.Release()
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go r.l.Acquire(ctx, "k", 1) //nolint:errcheck // cancelled below
			synctest.Wait()
			_, err := r.l.Acquire(t.Context(), "k", 1)
			return err
		}, concurrency.ErrQueueFull, false},
		{"caller's deadline", func(t *testing.T, r *rig) error {
			hold := r.take(t, 1)
			defer hold.Release()
			ctx, cancel := context.WithTimeout(t.Context(), time.Second)
			defer cancel()
			_, err := r.l.Acquire(ctx, "k", 1)
			return err
		}, context.DeadlineExceeded, false},
		{"primary closed", func(t *testing.T, r *rig) error {
			r.primary.Close()
			_, err := r.l.Acquire(t.Context(), "k", 1)
			return err
		}, ratelimit.ErrClosed, false},
		{"primary's timeout", func(t *testing.T, r *rig) error {
			r.primary.fail(fmt.Errorf("distributed: %w (%w)", ratelimit.ErrTimeout, context.DeadlineExceeded))
			_, err := r.l.Acquire(t.Context(), "k", 1)
			return err
		}, nil, true},
		{"client error", func(t *testing.T, r *rig) error {
			r.primary.fail(errDown)
			_, err := r.l.Acquire(t.Context(), "k", 1)
			return err
		}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, fallback.WithFailureThreshold(1))
				r.primary.Limiter = local.New(local.WithQueue(1, local.OldestFirst))
				defer r.primary.Limiter.Close()
				err := tc.call(t, r)
				if tc.want != nil {
					require.ErrorIs(t, err, tc.want)
				} else {
					require.NoError(t, err, "the secondary answers")
				}
				want := fallback.Closed
				if tc.failure {
					want = fallback.Open
				}
				assert.Equal(t, want, r.l.State())
				assert.Equal(t, tc.failure, r.secondary.Stats().InFlight == 1, "the secondary granted the permit")
			})
		})
	}
}

// TestDegradedAcquireWaits: while degraded, Acquire waits in the secondary's queue, and
// gets the share's permit a holder releases.
func TestDegradedAcquireWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, fallback.WithInstances(5))
		r.primary.fail(errDown)
		held := r.take(t, 5) // the share: 5/5 = 1
		got := make(chan error, 1)
		go func() {
			p, err := r.l.Acquire(t.Context(), "k", 5)
			defer p.Release()
			got <- err
		}()
		synctest.Wait()
		assert.Empty(t, got, "waiting for the share's permit")
		held.Release()
		require.NoError(t, <-got)
	})
}

// TestNoSecondary: without a secondary, a failure of the primary and the calls the open
// breaker keeps off it fail with ErrUnavailable.
func TestNoSecondary(t *testing.T) {
	primary := &switched{Limiter: local.New()}
	defer primary.Close()
	l := fallback.New(primary, nil, fallback.WithFailureThreshold(1))
	primary.fail(errDown)
	_, err := l.Acquire(t.Context(), "k", 1)
	require.ErrorIs(t, err, fallback.ErrUnavailable)
	assert.ErrorIs(t, err, errDown)
	_, ok, err := l.TryAcquire(t.Context(), "k", 1)
	require.ErrorIs(t, err, fallback.ErrUnavailable)
	assert.False(t, ok)
	assert.Equal(t, 1, primary.called(), "the open breaker kept the second call off the primary")
}

// TestArguments: what no limiter could decide is refused before either is asked, and the
// Limiter refuses every call once closed.
func TestArguments(t *testing.T) {
	r := newRig(t, fallback.WithFailureThreshold(1))
	for _, tc := range []struct {
		key  string
		max  int
		want error
	}{
		{"", 1, ratelimit.ErrInvalidArgument},
		{string(make([]byte, args.MaxKeyLen+1)), 1, ratelimit.ErrInvalidArgument},
		{"k", 0, ratelimit.ErrInvalidArgument},
	} {
		_, err := r.l.Acquire(t.Context(), tc.key, tc.max)
		assert.ErrorIs(t, err, tc.want)
	}
	require.NoError(t, r.l.Close())
	_, _, err := r.l.TryAcquire(t.Context(), "k", 1)
	assert.ErrorIs(t, err, ratelimit.ErrClosed)
	assert.Zero(t, r.primary.called())
	assert.NoError(t, r.l.Close(), "a second Close")
}
