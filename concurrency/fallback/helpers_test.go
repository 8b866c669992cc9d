package fallback_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/fallback"
	"github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// errDown is what the switched primary answers while it is down: a client's error, which
// observe.Classify counts as the backend unavailable.
var errDown = errors.New("distributed: connection refused")

// switched is a primary that is a local.Limiter while up, and fails every call with err while
// down, counting the calls that reach it.
type switched struct {
	*local.Limiter
	mu    sync.Mutex
	err   error
	calls int
}

func (s *switched) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *switched) called() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *switched) down() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return s.err
}

func (s *switched) Acquire(ctx context.Context, key string, max int) (concurrency.Permit, error) {
	if err := s.down(); err != nil {
		return concurrency.Permit{}, err
	}
	return s.Limiter.Acquire(ctx, key, max)
}

func (s *switched) TryAcquire(ctx context.Context, key string, max int) (concurrency.Permit, bool, error) {
	if err := s.down(); err != nil {
		return concurrency.Permit{}, false, err
	}
	return s.Limiter.TryAcquire(ctx, key, max)
}

// rig is a fallback Limiter on a switched primary and a local.Limiter secondary, with a clock that
// moves only when the test says, and its hooks recorded.
type rig struct {
	l         *fallback.Limiter
	primary   *switched
	secondary *local.Limiter
	clock     *ratelimittest.Clock
	hooks     *recorder
}

func newRig(t *testing.T, opts ...fallback.Option) *rig {
	t.Helper()
	r := &rig{
		primary:   &switched{Limiter: local.New()},
		secondary: local.New(),
		clock:     ratelimittest.NewClock(),
		hooks:     &recorder{},
	}
	t.Cleanup(func() { r.primary.Close(); r.secondary.Close() })
	opts = append([]fallback.Option{
		fallback.WithClock(r.clock.Now),
		fallback.WithStateHook(r.hooks.state),
		fallback.WithErrorHandler(r.hooks.err),
	}, opts...)
	r.l = fallback.New(r.primary, r.secondary, opts...)
	t.Cleanup(func() { r.l.Close() })
	return r
}

// take acquires a permit of key "k" under max without waiting, and requires one.
func (r *rig) take(t *testing.T, max int) concurrency.Permit {
	t.Helper()
	p, ok, err := r.l.TryAcquire(t.Context(), "k", max)
	require.NoError(t, err)
	require.True(t, ok, "a permit is free")
	return p
}

// free reports whether key "k" has a permit free under max, without taking it.
func (r *rig) free(t *testing.T, max int) bool {
	t.Helper()
	p, ok, err := r.l.TryAcquire(t.Context(), "k", max)
	require.NoError(t, err)
	p.Release()
	return ok
}

// recorder collects what a Limiter's hooks are told.
type recorder struct {
	mu      sync.Mutex
	changes []string
	errs    []string // "key: error"
}

func (r *recorder) state(c fallback.StateChange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, c.String())
}

func (r *recorder) err(_ context.Context, key string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, key+": "+err.Error())
}

func (r *recorder) seen() (changes, errs []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.changes...), append([]string(nil), r.errs...)
}
