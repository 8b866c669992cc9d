package ratelimittest

// The fake limiters, for the tests of what uses a ratelimit.Limiter (middleware, wrappers)
// in the cases a real backend cannot be made to produce on demand: a given error, a given
// Delay, a limiter that blocks until the caller gives up.

import (
	"context"
	"fmt"
	"sync"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// Stub is a ratelimit.Limiter that answers every call with Result (its Limit set to the
// call's) and Err, and records the keys, costs and priorities (of the call's context) it
// was asked. Each call is told on Entered
// when it is not nil. With Block set, AllowN and Wait then block until the caller's context
// ends, and return its error. It is safe for concurrent use.
type Stub struct {
	Result  ratelimit.Result
	Err     error
	Block   bool
	Entered chan<- struct{}

	mu         sync.Mutex
	keys       []string
	costs      []int
	priorities []priority.Level
}

var _ ratelimit.Limiter = (*Stub)(nil)

// Allow is AllowN with n = 1.
func (s *Stub) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return s.AllowN(ctx, key, limit, 1)
}

// AllowN records key, n and the priority and answers as Stub says.
func (s *Stub) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	s.record(ctx, key, n)
	if err := s.block(ctx); err != nil {
		return ratelimit.Result{Limit: limit}, err
	}
	res := s.Result
	res.Limit = limit
	return res, s.Err
}

// Wait records key and the priority and answers Err.
func (s *Stub) Wait(ctx context.Context, key string, _ ratelimit.Limit) error {
	s.record(ctx, key, 1)
	if err := s.block(ctx); err != nil {
		return err
	}
	return s.Err
}

func (s *Stub) record(ctx context.Context, key string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, key)
	s.costs = append(s.costs, n)
	s.priorities = append(s.priorities, priority.From(ctx))
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

// Priorities returns the priorities asked at so far, one per key.
func (s *Stub) Priorities() []priority.Level {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]priority.Level(nil), s.priorities...)
}

// Costs returns the costs asked so far.
func (s *Stub) Costs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int(nil), s.costs...)
}

// Multi is a Stub that also decides several limits (ratelimit.MultiLimiter), answering
// every AllowAll with MultiResult, and refunds (ratelimit.Inspector), recording each refund
// as "key n".
type Multi struct {
	Stub
	MultiResult ratelimit.MultiResult

	refunds []string
}

var (
	_ ratelimit.MultiLimiter = (*Multi)(nil)
	_ ratelimit.Inspector    = (*Multi)(nil)
)

// AllowAll answers MultiResult, and Err.
func (m *Multi) AllowAll(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, error) {
	for _, q := range reqs {
		m.record(ctx, q.Key, max(q.N, 1))
	}
	if err := m.block(ctx); err != nil {
		return ratelimit.MultiResult{}, err
	}
	return m.MultiResult, m.Err
}

// Peek answers Result.
func (m *Multi) Peek(_ context.Context, _ string, limit ratelimit.Limit, _ int) (ratelimit.Result, error) {
	res := m.Result
	res.Limit = limit
	return res, m.Err
}

// Refund records the refund: "key n", followed by the charge's instant (Unix µs) and part
// when the charge is not zero.
func (m *Multi) Refund(_ context.Context, key string, limit ratelimit.Limit, n int, c ratelimit.Charge) (ratelimit.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := fmt.Sprintf("%s %d", key, n)
	if c != (ratelimit.Charge{}) {
		r += fmt.Sprintf(" charged at %d by %q", c.At.UnixMicro(), c.Part)
	}
	m.refunds = append(m.refunds, r)
	return ratelimit.Result{Allowed: true, Limit: limit}, nil
}

// Reset does nothing.
func (m *Multi) Reset(context.Context, string, ratelimit.Limit) error { return nil }

// Refunds returns the refunds made so far.
func (m *Multi) Refunds() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.refunds...)
}
