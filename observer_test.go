package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu          sync.Mutex
	decisions   []ratelimit.Decision
	transitions []ratelimit.BreakerTransition
}

func (r *recorder) ObserveDecision(_ context.Context, d ratelimit.Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decisions = append(r.decisions, d)
}

func (r *recorder) ObserveBreaker(t ratelimit.BreakerTransition) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.transitions = append(r.transitions, t)
}

// panicker panics on every call.
type panicker struct{}

func (panicker) ObserveDecision(context.Context, ratelimit.Decision) { panic("observer broke") }
func (panicker) ObserveBreaker(ratelimit.BreakerTransition)          { panic("observer broke") }

// discard observes nothing, at no cost.
type discard struct{}

func (discard) ObserveDecision(context.Context, ratelimit.Decision) {}

func TestClassifyError(t *testing.T) {
	live := context.Background()
	canceled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithDeadline(live, time.Unix(0, 0))
	defer cancel2()

	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want ratelimit.ErrorKind
	}{
		{"nil", live, nil, ratelimit.KindNone},
		{"closed", live, ratelimit.ErrClosed, ratelimit.KindClosed},
		{"closed wrapped, caller gone", canceled, fmt.Errorf("x: %w", ratelimit.ErrClosed), ratelimit.KindClosed},
		{"empty key", live, ratelimit.ErrKeyEmpty, ratelimit.KindInvalidInput},
		{"long key", live, ratelimit.ErrKeyTooLong, ratelimit.KindInvalidInput},
		{"limit", live, fmt.Errorf("%w: burst 0", ratelimit.ErrInvalidLimit), ratelimit.KindInvalidInput},
		{"cost", live, ratelimit.ErrInvalidCost, ratelimit.KindInvalidInput},
		{"burst", live, ratelimit.ErrExceedsBurst, ratelimit.KindInvalidInput},
		{"not supported", live, ratelimit.ErrNotSupported, ratelimit.KindInvalidInput},
		{"bucket state", live, ratelimit.ErrInvalidState, ratelimit.KindInvalidInput},
		{"invalid request list", live, fmt.Errorf("distributed: %w", ratelimit.ErrInvalidRequest), ratelimit.KindInvalidInput},
		{"cross slot", live, fmt.Errorf("distributed: %w", ratelimit.ErrCrossSlot), ratelimit.KindInvalidInput},
		{"backend deadline", live, fmt.Errorf("redis: %w", ratelimit.ErrTimeout), ratelimit.KindTimeout},
		// The limiter's own context.WithTimeout passed while the caller's did not.
		{"own deadline", live, fmt.Errorf("redis: %w", context.DeadlineExceeded), ratelimit.KindTimeout},
		{"caller's deadline", expired, fmt.Errorf("redis: %w", context.DeadlineExceeded), ratelimit.KindCanceled},
		{"caller canceled", canceled, fmt.Errorf("redis: %w", context.Canceled), ratelimit.KindCanceled},
		// ErrTimeout says the backend was too slow, whoever's context ends meanwhile.
		{"timeout, caller gone", canceled, fmt.Errorf("%w: %w", ratelimit.ErrTimeout, context.DeadlineExceeded), ratelimit.KindTimeout},
		// A Canceled that the caller did not cause is the backend's failure.
		{"canceled inside", live, context.Canceled, ratelimit.KindUnavailable},
		{"redis down", live, errors.New("dial tcp: connection refused"), ratelimit.KindUnavailable},
		{"nil context", nil, context.DeadlineExceeded, ratelimit.KindTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, ratelimit.ClassifyError(c.ctx, c.err))
		})
	}
}

func TestKindAndOutcomeNames(t *testing.T) {
	names := map[ratelimit.ErrorKind]string{
		ratelimit.KindNone: "none", ratelimit.KindTimeout: "timeout", ratelimit.KindUnavailable: "unavailable",
		ratelimit.KindInvalidInput: "invalid_input", ratelimit.KindCanceled: "canceled", ratelimit.KindClosed: "closed",
		ratelimit.ErrorKind(9): "ErrorKind(9)",
	}
	for k, want := range names {
		assert.Equal(t, want, k.String())
	}
	assert.Equal(t, "allowed", ratelimit.OutcomeAllowed.String())
	assert.Equal(t, "denied", ratelimit.OutcomeDenied.String())
	assert.Equal(t, "error", ratelimit.OutcomeError.String())
	assert.Equal(t, "Outcome(7)", ratelimit.Outcome(7).String())
}

func TestSetOutcome(t *testing.T) {
	limit := ratelimit.PerSecond(5)
	share := ratelimit.Limit{Rate: 2.5, Burst: 2}

	var d ratelimit.Decision
	d.Limit = limit
	d.SetOutcome(context.Background(), ratelimit.Result{Allowed: true, Limit: share, Remaining: 1}, nil)
	assert.Equal(t, ratelimit.Decision{Outcome: ratelimit.OutcomeAllowed, Remaining: 1, Limit: share}, d)

	d.SetOutcome(context.Background(), ratelimit.Result{Limit: limit, RetryAfter: time.Second}, nil)
	assert.Equal(t, ratelimit.Decision{Outcome: ratelimit.OutcomeDenied, Limit: limit}, d)

	// An error's Result may lack the Limit: the one asked for stays.
	d.Remaining = 3
	d.SetOutcome(context.Background(), ratelimit.Result{}, ratelimit.ErrClosed)
	assert.Equal(t, ratelimit.Decision{
		Outcome: ratelimit.OutcomeError, ErrorKind: ratelimit.KindClosed, Err: ratelimit.ErrClosed, Limit: limit,
	}, d)
}

func TestObservers(t *testing.T) {
	assert.Nil(t, ratelimit.Observers())
	assert.Nil(t, ratelimit.Observers(nil, nil))

	a, b := &recorder{}, &recorder{}
	// A broken observer between two good ones: both good ones are told, the caller goes on.
	o := ratelimit.Observers(a, ratelimit.Observers(panicker{}, nil), b)
	d := ratelimit.Decision{Policy: "api", Backend: "local", Outcome: ratelimit.OutcomeDenied, Cost: 1}
	require.NotPanics(t, func() { o.ObserveDecision(context.Background(), d) })
	assert.Equal(t, []ratelimit.Decision{d}, a.decisions)
	assert.Equal(t, []ratelimit.Decision{d}, b.decisions)

	// Breaker transitions go to the members that want them, past a broken one.
	bo, ok := o.(ratelimit.BreakerObserver)
	require.True(t, ok)
	tr := ratelimit.BreakerTransition{From: "closed", To: "open", Err: errors.New("redis down")}
	require.NotPanics(t, func() { bo.ObserveBreaker(tr) })
	assert.Equal(t, []ratelimit.BreakerTransition{tr}, a.transitions)
	assert.Equal(t, []ratelimit.BreakerTransition{tr}, b.transitions)

	// A lone observer that does not want transitions is skipped.
	ratelimit.Observers(discard{}).(ratelimit.BreakerObserver).ObserveBreaker(tr)
}

type named struct{ ratelimit.Limiter }

func (named) BackendName() string { return "memcached" }

type store struct{ ratelimit.Limiter }

func TestBackendName(t *testing.T) {
	l := local.New()
	defer l.Close()
	assert.Equal(t, "local", ratelimit.BackendName(l))
	assert.Equal(t, "memcached", ratelimit.BackendName(named{l}))
	assert.Equal(t, "ratelimit_test.store", ratelimit.BackendName(store{l}))
	assert.Equal(t, "ratelimit_test.store", ratelimit.BackendName(&store{l}))
	assert.Equal(t, "local", ratelimit.BackendName(ratelimit.Observe(l, discard{}, "api")))
}

// TestObserve runs the seed timeline (Rate 1/s, Burst 2: A and B allowed at 0.1 s, C
// denied, D allowed at 1.5 s) through Observe, then the errors.
func TestObserve(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	l := local.New(local.WithClock(func() time.Time { return now }), local.WithCleanupInterval(0))
	rec := &recorder{}
	o := ratelimit.Observe(l, ratelimit.Observers(rec, panicker{}), "api")
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1, Burst: 2}

	step := func(at time.Duration, want ratelimit.Outcome, remaining int) {
		t.Helper()
		now = t0.Add(at)
		res, err := o.Allow(ctx, "client", limit)
		require.NoError(t, err)
		assert.Equal(t, want == ratelimit.OutcomeAllowed, res.Allowed)
		d := rec.decisions[len(rec.decisions)-1]
		assert.GreaterOrEqual(t, d.Duration, time.Duration(0))
		d.Duration = 0
		assert.Equal(t, ratelimit.Decision{
			Policy: "api", Backend: "local", Outcome: want, Cost: 1, Remaining: remaining, Limit: limit,
		}, d)
	}
	step(100*time.Millisecond, ratelimit.OutcomeAllowed, 1)
	step(100*time.Millisecond, ratelimit.OutcomeAllowed, 0)
	step(100*time.Millisecond, ratelimit.OutcomeDenied, 0)
	step(1500*time.Millisecond, ratelimit.OutcomeAllowed, 0)

	// The priority is the one the context carries. (Burst 2 keeps nothing back from Normal
	// requests: ⌊0.1 × 2⌋ = 0.)
	_, err := o.Allow(ratelimit.WithPriority(ctx, ratelimit.Normal), "other", limit)
	require.NoError(t, err)
	d := rec.decisions[len(rec.decisions)-1]
	d.Duration = 0
	assert.Equal(t, ratelimit.Decision{
		Policy: "api", Backend: "local", Outcome: ratelimit.OutcomeAllowed, Cost: 1, Priority: ratelimit.Normal,
		Remaining: 1, Limit: limit,
	}, d)

	_, err = o.AllowN(ctx, "", limit, 1)
	require.ErrorIs(t, err, ratelimit.ErrKeyEmpty)
	_, err = o.AllowN(ctx, "client", limit, 3)
	require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
	require.NoError(t, o.Close())
	_, err = o.Allow(ctx, "client", limit)
	require.ErrorIs(t, err, ratelimit.ErrClosed)
	require.ErrorIs(t, o.Wait(ctx, "client", limit), ratelimit.ErrClosed)

	require.Len(t, rec.decisions, 8, "Wait is not observed")
	for i, want := range []struct {
		kind ratelimit.ErrorKind
		cost int
		err  error
	}{{ratelimit.KindInvalidInput, 1, ratelimit.ErrKeyEmpty}, {ratelimit.KindInvalidInput, 3, ratelimit.ErrExceedsBurst}, {ratelimit.KindClosed, 1, ratelimit.ErrClosed}} {
		d := rec.decisions[5+i]
		assert.Equal(t, ratelimit.OutcomeError, d.Outcome)
		assert.Equal(t, want.kind, d.ErrorKind)
		assert.Equal(t, want.cost, d.Cost)
		assert.ErrorIs(t, d.Err, want.err)
		assert.Equal(t, limit, d.Limit)
	}

	assert.Equal(t, l, o.Unwrap())
	require.NoError(t, o.ValidateLimit(limit))
	require.ErrorIs(t, o.ValidateLimit(ratelimit.Limit{Rate: 1}), ratelimit.ErrInvalidLimit)
	assert.Panics(t, func() { ratelimit.Observe(nil, rec, "api") })
	assert.Panics(t, func() { ratelimit.Observe(l, nil, "api") })
}

// originLimiter reports that a backend called "inner" decided, from its cache.
type originLimiter struct{ ratelimit.Limiter }

func (o originLimiter) AllowNOrigin(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, ratelimit.Origin, error) {
	res, err := o.AllowN(ctx, key, limit, n)
	return res, ratelimit.Origin{Backend: "inner", Cached: true}, err
}

func TestObserveOrigin(t *testing.T) {
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	rec := &recorder{}
	o := ratelimit.Observe(originLimiter{l}, rec, "api")
	_, org, err := o.AllowNOrigin(context.Background(), "k", ratelimit.PerSecond(1), 1)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Origin{Backend: "inner", Cached: true}, org)
	require.Len(t, rec.decisions, 1)
	assert.Equal(t, "inner", rec.decisions[0].Backend)
	assert.True(t, rec.decisions[0].Cached)
}

// TestObserveAllocs: reporting a decision allocates nothing beyond what the limiter does
// (none, for local), panic recovery included.
func TestObserveAllocs(t *testing.T) {
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	o := ratelimit.Observe(l, ratelimit.Observers(discard{}, discard{}), "api")
	ctx := context.Background()
	limit := ratelimit.PerSecond(1e9)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := o.Allow(ctx, "k", limit); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs)
}

// observers keeps the benchmark's observers out of the compiler's sight, so that every call
// goes through the interface, as a reporter's does.
var observers = []ratelimit.Observer{discard{}, ratelimit.Observers(discard{}), ratelimit.Observers(panicker{})}

// BenchmarkObserversRecover measures what the recovery of Observers costs: an observer
// called through its interface, the same through Observers (a loop and one deferred
// recover per observer), and one that panics every time.
func BenchmarkObserversRecover(b *testing.B) {
	ctx := context.Background()
	d := ratelimit.Decision{Policy: "api", Backend: "local", Cost: 1}
	for i, name := range []string{"interface", "observers", "panicking"} {
		b.Run(name, func(b *testing.B) {
			o := observers[i]
			for b.Loop() {
				o.ObserveDecision(ctx, d)
			}
		})
	}
}
