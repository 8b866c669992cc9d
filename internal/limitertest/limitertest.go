// Package limitertest has the one fake ratelimit.Limiter of the module's tests, for the
// cases a real backend cannot be made to produce on demand: a given error, a given Delay,
// a limiter that blocks until the caller gives up.
package limitertest

import (
	"context"
	"sync"
	"testing"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/conformance"
	"github.com/sluice-go/ratelimit/local"
)

// Stub is a ratelimit.Limiter that answers every call with Result (its Limit set to the
// call's) and Err, and records the keys and costs it was asked. Each call is told on Entered
// when it is not nil. With Block set, AllowN and Wait then block until the caller's context
// ends, and return its error. It is safe for concurrent use.
type Stub struct {
	Result  ratelimit.Result
	Err     error
	Block   bool
	Entered chan<- struct{}

	mu    sync.Mutex
	keys  []string
	costs []int
}

var _ ratelimit.Limiter = (*Stub)(nil)

// Allow is AllowN with n = 1.
func (s *Stub) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return s.AllowN(ctx, key, limit, 1)
}

// AllowN records key and n and answers as Stub says.
func (s *Stub) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	s.mu.Lock()
	s.keys = append(s.keys, key)
	s.costs = append(s.costs, n)
	s.mu.Unlock()
	if err := s.block(ctx); err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	res := s.Result
	res.Limit = limit
	return res, s.Err
}

// Wait records key and answers Err.
func (s *Stub) Wait(ctx context.Context, key string, _ ratelimit.Limit) error {
	s.mu.Lock()
	s.keys = append(s.keys, key)
	s.costs = append(s.costs, 1)
	s.mu.Unlock()
	if err := s.block(ctx); err != nil {
		return err
	}
	return s.Err
}

func (s *Stub) block(ctx context.Context) error {
	if s.Entered != nil {
		s.Entered <- struct{}{}
	}
	if !s.Block {
		return nil
	}
	<-ctx.Done()
	return ctx.Err()
}

// Close returns nil.
func (s *Stub) Close() error { return nil }

// Keys returns the keys asked so far.
func (s *Stub) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

// Costs returns the costs asked so far.
func (s *Stub) Costs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.costs...)
}

// Local returns a local limiter, with opts, that reads a clock moving only when the test
// says, and closes it when the test ends.
func Local(t testing.TB, opts ...local.Option) (*local.Limiter, *conformance.Clock) {
	t.Helper()
	clock := conformance.NewClock()
	l := local.New(append([]local.Option{local.WithClock(clock.Now)}, opts...)...)
	t.Cleanup(func() { _ = l.Close() })
	return l, clock
}
