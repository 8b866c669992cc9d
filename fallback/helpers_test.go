package fallback_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// errDown is what a switched-off primary answers, as a Redis backend does when Redis is
// unreachable.
var errDown = errors.New("distributed: connection refused")

// switched is a primary whose failures the test turns on and off: a real local limiter that,
// while down, answers errDown instead (or err, when set) without touching its buckets. It
// counts the calls that reached it. While gate is not nil, every call waits for it to close
// first: a primary that hangs.
type switched struct {
	*local.Limiter
	down  atomic.Bool
	calls atomic.Int64
	mu    sync.Mutex
	err   error
	gate  chan struct{}
}

func (s *switched) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return s.AllowN(ctx, key, limit, 1)
}

func (s *switched) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	s.calls.Add(1)
	s.mu.Lock()
	gate, err := s.gate, s.err
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if s.down.Load() {
		if err == nil {
			err = errDown
		}
		return ratelimit.Result{Limit: limit}, err
	}
	return s.Limiter.AllowN(ctx, key, limit, n)
}

func (s *switched) Wait(ctx context.Context, key string, limit ratelimit.Limit) error {
	s.calls.Add(1)
	if s.down.Load() {
		return errDown
	}
	return s.Limiter.Wait(ctx, key, limit)
}

// Refund refunds the real limiter's bucket, or, while down, answers errDown as AllowN does.
func (s *switched) Refund(ctx context.Context, key string, limit ratelimit.Limit, n int, c ratelimit.Charge) (ratelimit.Result, error) {
	s.calls.Add(1)
	if s.down.Load() {
		return ratelimit.Result{Limit: limit}, errDown
	}
	return s.Limiter.Refund(ctx, key, limit, n, c)
}

// fail makes every later call answer err (errDown if nil).
func (s *switched) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
	s.down.Store(true)
}

// hang makes every later call wait until the returned function is called.
func (s *switched) hang() (release func()) {
	gate := make(chan struct{})
	s.mu.Lock()
	s.gate = gate
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		s.gate = nil
		s.mu.Unlock()
		close(gate)
	}
}

// newLocal returns a local limiter on clock, without a cleanup goroutine.
func newLocal(t *testing.T, clock *ratelimittest.Clock) *local.Limiter {
	t.Helper()
	l := local.New(local.WithClock(clock.Now), local.WithCleanupInterval(-1))
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// newSwitched returns a healthy switched primary on clock.
func newSwitched(t *testing.T, clock *ratelimittest.Clock) *switched {
	return &switched{Limiter: newLocal(t, clock)}
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

// ins returns l's ratelimit.Inspector, found the way middleware finds it.
func ins(l ratelimit.Limiter) ratelimit.Inspector {
	i, ok := ratelimit.As[ratelimit.Inspector](l)
	if !ok {
		panic("not an Inspector")
	}
	return i
}

// multi returns l's ratelimit.MultiLimiter, found the way middleware finds it.
func multi(l ratelimit.Limiter) ratelimit.MultiLimiter {
	m, ok := ratelimit.As[ratelimit.MultiLimiter](l)
	if !ok {
		panic("not a MultiLimiter")
	}
	return m
}
