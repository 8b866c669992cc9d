package faults

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/fallback"
)

// events records the breaker's changes and the primary's failures, and when they happened.
type events struct {
	mu       sync.Mutex
	changes  []fallback.StateChange
	times    []time.Time
	failures []failure
}

type failure struct {
	at  time.Time
	err error
}

func (e *events) fail(_ context.Context, _ string, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.failures = append(e.failures, failure{time.Now(), err})
}

// failedSince returns the primary's failures at or after since.
func (e *events) failedSince(since time.Time) []failure {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []failure
	for _, f := range e.failures {
		if !f.at.Before(since) {
			out = append(out, f)
		}
	}
	return out
}

func (e *events) hook(c fallback.StateChange) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.changes = append(e.changes, c)
	e.times = append(e.times, time.Now())
}

// first returns when the breaker first entered state to at or after since, if it did.
func (e *events) first(to fallback.State, since time.Time) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, c := range e.changes {
		if c.To == to && !e.times[i].Before(since) {
			return e.times[i], true
		}
	}
	return time.Time{}, false
}

// timed is a Limiter that records how long each AllowN of the Limiter it wraps took (the
// latency the limiter adds to a request, without the noise of the rest of the request) and
// its outcome, as the HTTP status the middleware would answer with (500 for an error).
type timed struct {
	ratelimit.Limiter
	mu      sync.Mutex
	samples []sample
}

func (t *timed) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return t.AllowN(ctx, key, limit, 1)
}

func (t *timed) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	start := time.Now()
	res, err := t.Limiter.AllowN(ctx, key, limit, n)
	took := time.Since(start)
	code := http.StatusOK
	switch {
	case err != nil:
		code = http.StatusInternalServerError
	case !res.Allowed:
		code = http.StatusTooManyRequests
	}
	t.mu.Lock()
	t.samples = append(t.samples, sample{at: start, took: took, code: code})
	t.mu.Unlock()
	return res, err
}

func (t *timed) all() []sample {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.samples)
}

// stalls measures how long this process was kept from running, by a machine busy with
// other work: it ticks every 5 ms and records each tick. A recovery time less the stalls
// within it is what the limiter can answer for.
type stalls struct {
	mu    sync.Mutex
	ticks []time.Time
}

// measureStalls starts ticking until the test's cleanup.
func measureStalls(t *testing.T) *stalls {
	s := &stalls{}
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(5 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-ticker.C:
				s.mu.Lock()
				s.ticks = append(s.ticks, now)
				s.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
	return s
}

// within returns the time lost to stalls between from and to: the excess over 5 ms of every
// gap longer than 10 ms between two ticks, counting only its part within that span.
func (s *stalls) within(from, to time.Time) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var lost time.Duration
	for i := 1; i < len(s.ticks); i++ {
		a, b := s.ticks[i-1], s.ticks[i]
		if b.Sub(a) <= 10*time.Millisecond || b.Before(from) || a.After(to) {
			continue
		}
		// The part of the gap within [from, to], less the tick's own 5 ms.
		if a.Before(from) {
			a = from
		}
		if b.After(to) {
			b = to
		}
		lost += max(b.Sub(a)-5*time.Millisecond, 0)
	}
	return lost
}

// waitFor waits until the breaker has entered state to at or after since, or for limit.
func (e *events) waitFor(to fallback.State, since time.Time, limit time.Duration) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, ok := e.first(to, since); ok {
			return
		}
	}
}

// last returns when the breaker last entered state to before until, if it did.
func (e *events) last(to fallback.State, until time.Time) (time.Time, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i := len(e.changes) - 1; i >= 0; i-- {
		if e.changes[i].To == to && e.times[i].Before(until) {
			return e.times[i], true
		}
	}
	return time.Time{}, false
}

// count returns how many times the breaker changed state at or after since.
func (e *events) count(since time.Time) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, at := range e.times {
		if !at.Before(since) {
			n++
		}
	}
	return n
}
