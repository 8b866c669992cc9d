package observe_test

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
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu        sync.Mutex
	decisions []observe.Decision
}

func (r *recorder) ObserveDecision(_ context.Context, d observe.Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.decisions = append(r.decisions, d)
}

// panicker panics on every call.
type panicker struct{}

func (panicker) ObserveDecision(context.Context, observe.Decision) { panic("observer broke") }

// discard observes nothing, at no cost.
type discard struct{}

func (discard) ObserveDecision(context.Context, observe.Decision) {}

func TestClassify(t *testing.T) {
	live := context.Background()
	canceled, cancel := context.WithCancel(live)
	cancel()
	expired, cancel2 := context.WithDeadline(live, time.Unix(0, 0))
	defer cancel2()

	for _, c := range []struct {
		name string
		ctx  context.Context
		err  error
		want observe.ErrorKind
	}{
		{"nil", live, nil, observe.KindNone},
		{"closed", live, ratelimit.ErrClosed, observe.KindClosed},
		{"closed wrapped, caller gone", canceled, fmt.Errorf("x: %w", ratelimit.ErrClosed), observe.KindClosed},
		{"empty key", live, ratelimit.ErrInvalidArgument, observe.KindInvalidInput},
		{"long key", live, ratelimit.ErrInvalidArgument, observe.KindInvalidInput},
		{"limit", live, fmt.Errorf("%w: burst 0", ratelimit.ErrInvalidArgument), observe.KindInvalidInput},
		{"cost", live, ratelimit.ErrInvalidArgument, observe.KindInvalidInput},
		{"burst", live, ratelimit.ErrExceedsBurst, observe.KindInvalidInput},
		{"not supported", live, ratelimit.ErrNotSupported, observe.KindInvalidInput},
		{"bucket state", live, ratelimit.ErrInvalidState, observe.KindInvalidInput},
		{"invalid request list", live, fmt.Errorf("distributed: %w", ratelimit.ErrInvalidArgument), observe.KindInvalidInput},
		{"cross slot", live, fmt.Errorf("%w: keys in different hash slots", ratelimit.ErrInvalidArgument), observe.KindInvalidInput},
		{"backend deadline", live, fmt.Errorf("redis: %w", ratelimit.ErrTimeout), observe.KindTimeout},
		// The limiter's own context.WithTimeout passed while the caller's did not.
		{"own deadline", live, fmt.Errorf("redis: %w", context.DeadlineExceeded), observe.KindTimeout},
		{"caller's deadline", expired, fmt.Errorf("redis: %w", context.DeadlineExceeded), observe.KindCanceled},
		{"caller canceled", canceled, fmt.Errorf("redis: %w", context.Canceled), observe.KindCanceled},
		// ErrTimeout says the backend was too slow, whoever's context ends meanwhile.
		{"timeout, caller gone", canceled, fmt.Errorf("%w: %w", ratelimit.ErrTimeout, context.DeadlineExceeded), observe.KindTimeout},
		// A Canceled that the caller did not cause is the backend's failure.
		{"canceled inside", live, context.Canceled, observe.KindUnavailable},
		{"redis down", live, errors.New("dial tcp: connection refused"), observe.KindUnavailable},
		{"nil context", nil, context.DeadlineExceeded, observe.KindTimeout},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, observe.Classify(c.ctx, c.err))
		})
	}
}

func TestKindAndOutcomeNames(t *testing.T) {
	names := map[observe.ErrorKind]string{
		observe.KindNone: "none", observe.KindTimeout: "timeout", observe.KindUnavailable: "unavailable",
		observe.KindInvalidInput: "invalid_input", observe.KindCanceled: "canceled", observe.KindClosed: "closed",
		observe.ErrorKind(9): "ErrorKind(9)",
	}
	for k, want := range names {
		assert.Equal(t, want, k.String())
	}
	assert.Equal(t, "allowed", observe.OutcomeAllowed.String())
	assert.Equal(t, "denied", observe.OutcomeDenied.String())
	assert.Equal(t, "error", observe.OutcomeError.String())
	assert.Equal(t, "Outcome(7)", observe.Outcome(7).String())
}

func TestJoin(t *testing.T) {
	assert.Nil(t, observe.Join())
	assert.Nil(t, observe.Join(nil, nil))

	a, b := &recorder{}, &recorder{}
	// A broken observer between two good ones: both good ones are told, the caller goes on.
	o := observe.Join(a, observe.Join(panicker{}, nil), b)
	d := observe.Decision{Policy: "api", Backend: "local", Outcome: observe.OutcomeDenied, Cost: 1}
	require.NotPanics(t, func() { o.ObserveDecision(context.Background(), d) })
	assert.Equal(t, []observe.Decision{d}, a.decisions)
	assert.Equal(t, []observe.Decision{d}, b.decisions)
}

type named struct{ ratelimit.Limiter }

func (named) BackendName() string { return "memcached" }

type store struct{ ratelimit.Limiter }

func TestBackendName(t *testing.T) {
	l := local.New()
	defer l.Close()
	assert.Equal(t, "local", observe.BackendName(l))
	assert.Equal(t, "memcached", observe.BackendName(named{l}))
	assert.Equal(t, "observe_test.store", observe.BackendName(store{l}))
	assert.Equal(t, "observe_test.store", observe.BackendName(&store{l}))
	assert.Equal(t, "local", observe.BackendName(observe.Wrap(l, discard{}, "api")))
}

// TestWrapPanic: a lone observer that panics (which Wrap tells of its decisions without
// Join's wrapper) costs the caller nothing: the limiter's answer comes back, every time.
func TestWrapPanic(t *testing.T) {
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	o := observe.Wrap(l, panicker{}, "api")
	limit := ratelimit.Limit{Rate: 1e-3, Burst: 2}
	for i, want := range []bool{true, true, false} {
		res, err := o.Allow(context.Background(), "k", limit)
		require.NoError(t, err, "call %d", i)
		assert.Equal(t, want, res.Allowed, "call %d", i)
	}
}

// TestObserve runs the seed timeline (Rate 1/s, Burst 2: A and B allowed at 0.1 s, C
// denied, D allowed at 1.5 s) through Wrap, then the errors.
func TestWrap(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	l := local.New(local.WithClock(func() time.Time { return now }), local.WithCleanupInterval(0))
	rec := &recorder{}
	o := observe.Wrap(l, observe.Join(rec, panicker{}), "api")
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1, Burst: 2}

	step := func(at time.Duration, want observe.Outcome, remaining int) {
		t.Helper()
		now = t0.Add(at)
		res, err := o.Allow(ctx, "client", limit)
		require.NoError(t, err)
		assert.Equal(t, want == observe.OutcomeAllowed, res.Allowed)
		d := rec.decisions[len(rec.decisions)-1]
		assert.GreaterOrEqual(t, d.Duration, time.Duration(0))
		d.Duration = 0
		assert.Equal(t, observe.Decision{
			Policy: "api", Backend: "local", Outcome: want, Cost: 1, Remaining: remaining, Limit: limit,
		}, d)
	}
	step(100*time.Millisecond, observe.OutcomeAllowed, 1)
	step(100*time.Millisecond, observe.OutcomeAllowed, 0)
	step(100*time.Millisecond, observe.OutcomeDenied, 0)
	step(1500*time.Millisecond, observe.OutcomeAllowed, 0)

	// The priority is the one the context carries. (Burst 2 keeps nothing back from Normal
	// requests: ⌊0.1 × 2⌋ = 0.)
	_, err := o.Allow(priority.With(ctx, priority.Normal), "other", limit)
	require.NoError(t, err)
	d := rec.decisions[len(rec.decisions)-1]
	d.Duration = 0
	assert.Equal(t, observe.Decision{
		Policy: "api", Backend: "local", Outcome: observe.OutcomeAllowed, Cost: 1, Priority: priority.Normal,
		Remaining: 1, Limit: limit,
	}, d)

	_, err = o.AllowN(ctx, "", limit, 1)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	_, err = o.AllowN(ctx, "client", limit, 3)
	require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
	require.NoError(t, o.Close())
	_, err = o.Allow(ctx, "client", limit)
	require.ErrorIs(t, err, ratelimit.ErrClosed)
	require.ErrorIs(t, o.Wait(ctx, "client", limit), ratelimit.ErrClosed)

	require.Len(t, rec.decisions, 8, "Wait is not observed")
	for i, want := range []struct {
		kind observe.ErrorKind
		cost int
		err  error
	}{{observe.KindInvalidInput, 1, ratelimit.ErrInvalidArgument}, {observe.KindInvalidInput, 3, ratelimit.ErrExceedsBurst}, {observe.KindClosed, 1, ratelimit.ErrClosed}} {
		d := rec.decisions[5+i]
		assert.Equal(t, observe.OutcomeError, d.Outcome)
		assert.Equal(t, want.kind, d.ErrorKind)
		assert.Equal(t, want.cost, d.Cost)
		assert.ErrorIs(t, d.Err, want.err)
		assert.Equal(t, limit, d.Limit)
	}

	assert.Equal(t, l, o.(interface{ Unwrap() ratelimit.Limiter }).Unwrap())
	v, ok := ratelimit.As[ratelimit.LimitValidator](o)
	require.True(t, ok)
	require.NoError(t, v.ValidateLimit(limit))
	require.ErrorIs(t, v.ValidateLimit(ratelimit.Limit{Rate: 1}), ratelimit.ErrInvalidArgument)
	assert.Panics(t, func() { observe.Wrap(nil, rec, "api") })
	assert.Panics(t, func() { observe.Wrap(l, nil, "api") })
}

// originLimiter reports that a backend called "inner" decided, from its cache.
type originLimiter struct{ ratelimit.Limiter }

func (o originLimiter) AllowNOrigin(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, observe.Origin, error) {
	res, err := o.AllowN(ctx, key, limit, n)
	return res, observe.Origin{Backend: "inner", Cached: true}, err
}

func (originLimiter) AllowAllOrigin(context.Context, []ratelimit.Request) (ratelimit.MultiResult, observe.Origin, error) {
	return ratelimit.MultiResult{}, observe.Origin{}, ratelimit.ErrNotSupported
}

func TestWrapOrigin(t *testing.T) {
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	rec := &recorder{}
	o := observe.Wrap(originLimiter{l}, rec, "api")
	or, ok := ratelimit.As[observe.OriginReporter](o)
	require.True(t, ok)
	_, org, err := or.AllowNOrigin(context.Background(), "k", ratelimit.PerSecond(1), 1)
	require.NoError(t, err)
	assert.Equal(t, observe.Origin{Backend: "inner", Cached: true}, org)
	require.Len(t, rec.decisions, 1)
	assert.Equal(t, "inner", rec.decisions[0].Backend)
	assert.True(t, rec.decisions[0].Cached)
}

// TestWrapAllocs: reporting a decision allocates nothing beyond what the limiter does
// (none, for local), panic recovery included.
func TestWrapAllocs(t *testing.T) {
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	o := observe.Wrap(l, observe.Join(discard{}, discard{}), "api")
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
var observers = []observe.Observer{discard{}, observe.Join(discard{}), observe.Join(panicker{})}

// BenchmarkJoinRecover measures what the recovery of Join costs: an observer called
// through its interface, the same through Join (a loop and one deferred
// recover per observer), and one that panics every time.
func BenchmarkJoinRecover(b *testing.B) {
	ctx := context.Background()
	d := observe.Decision{Policy: "api", Backend: "local", Cost: 1}
	for i, name := range []string{"interface", "observers", "panicking"} {
		b.Run(name, func(b *testing.B) {
			o := observers[i]
			for b.Loop() {
				o.ObserveDecision(ctx, d)
			}
		})
	}
}

// An observed limiter passes every rule of the contract that the limiter it wraps passes,
// its capabilities found through ratelimit.As as the suite finds them.
func TestWrapConformance(t *testing.T) {
	ratelimittest.Run(t, ratelimittest.Harness{
		New: func(t testing.TB, c ratelimittest.Config) ratelimit.Limiter {
			l := local.New(local.WithClock(c.Clock.Now), local.WithAlgorithm(c.Algorithm), local.WithReserves(c.Reserves))
			t.Cleanup(func() { _ = l.Close() })
			return observe.Wrap(l, discard{}, "p")
		},
		Reserves:  true,
		Warmup:    true,
		Quotas:    true,
		KeepUsage: true,
	})
}
