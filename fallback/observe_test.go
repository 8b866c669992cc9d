package fallback_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// observed keeps what an Observer and a state hook are told.
type observed struct {
	mu          sync.Mutex
	decisions   []observe.Decision
	transitions []fallback.StateChange
}

func (o *observed) ObserveDecision(_ context.Context, d observe.Decision) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d.Duration, d.Err = 0, nil // not compared
	o.decisions = append(o.decisions, d)
}

func (o *observed) ObserveBreaker(t fallback.StateChange) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.transitions = append(o.transitions, t)
}

// broken panics whenever it is told anything.
type broken struct{}

func (broken) ObserveDecision(context.Context, observe.Decision) { panic("broken observer") }
func (broken) ObserveBreaker(fallback.StateChange)               { panic("broken observer") }

// TestObserveOutage: an outage seen through observe.Wrap and WithStateHook. The primary
// decides and denies (the denial is cached), fails five times (the secondary decides, the
// breaker opens), and comes back after the cooldown (the probe closes the breaker).
func TestObserveOutage(t *testing.T) {
	obs := &observed{}
	r := newRig(t, fallback.WithStateHook(obs.ObserveBreaker), fallback.WithStateHook(broken{}.ObserveBreaker))
	l := observe.Wrap(r.l, observe.Join(obs, broken{}), "api")
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1, Burst: 1}

	call := func(key string) {
		t.Helper()
		_, err := l.Allow(ctx, key, limit)
		require.NoError(t, err)
	}
	call("a") // primary: allowed
	call("a") // primary: denied, and cached
	call("a") // the denial cache
	r.primary.fail(nil)
	for range 5 {
		call("b") // the primary fails, the secondary decides
	}
	call("b") // breaker open: the secondary, without asking
	r.clock.Advance(fallback.DefaultCooldown)
	r.primary.down.Store(false)
	call("c") // the probe: the primary, which closes the breaker

	const primary = "fallback_test.switched" // BackendName of the test's primary type
	d := func(backend string, outcome observe.Outcome, remaining int, cached bool) observe.Decision {
		return observe.Decision{
			Policy: "api", Backend: backend, Outcome: outcome, Cached: cached, Cost: 1,
			Remaining: remaining, Limit: limit,
		}
	}
	allowed, denied := observe.OutcomeAllowed, observe.OutcomeDenied
	assert.Equal(t, []observe.Decision{
		d(primary, allowed, 0, false),
		d(primary, denied, 0, false),
		d("fallback", denied, 0, true),
		d("local", allowed, 0, false), // b's first request, on the secondary's bucket
		d("local", denied, 0, false),
		d("local", denied, 0, false),
		d("local", denied, 0, false),
		d("local", denied, 0, false),
		d("local", denied, 0, false),
		d(primary, allowed, 0, false),
	}, obs.decisions)
	require.Len(t, obs.transitions, 3)
	assert.Equal(t, fallback.StateChange{From: fallback.Closed, To: fallback.Open, Err: errDown}, obs.transitions[0])
	assert.Equal(t, fallback.StateChange{From: fallback.Open, To: fallback.HalfOpen}, obs.transitions[1])
	assert.Equal(t, fallback.StateChange{From: fallback.HalfOpen, To: fallback.Closed}, obs.transitions[2])

	// The rig's own hook, given first, is told as well; the broken one after it stops
	// nothing.
	changes, _ := r.hooks.seen()
	assert.Equal(t, []string{opened, halfOpen, recovered}, changes)
}

// TestOriginWithoutSecondary: the errors the Limiter answers alone come from "fallback".
func TestOriginWithoutSecondary(t *testing.T) {
	clock := ratelimittest.NewClock()
	primary := newSwitched(t, clock)
	l := fallback.New(primary, nil, fallback.WithClock(clock.Now), fallback.WithFailureThreshold(1))
	ctx := context.Background()
	limit := ratelimit.PerSecond(1)

	_, org, err := l.AllowNOrigin(ctx, "", limit, 1)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	assert.Equal(t, observe.Origin{Backend: "fallback"}, org)

	primary.fail(nil)
	_, org, err = l.AllowNOrigin(ctx, "k", limit, 1)
	require.ErrorIs(t, err, fallback.ErrUnavailable)
	assert.Equal(t, observe.Origin{Backend: "fallback"}, org)
	assert.Equal(t, observe.KindUnavailable, observe.Classify(ctx, err))

	require.NoError(t, l.Close())
	_, org, err = l.AllowNOrigin(ctx, "k", limit, 1)
	require.ErrorIs(t, err, ratelimit.ErrClosed)
	assert.Equal(t, observe.Origin{Backend: "fallback"}, org)
	assert.Equal(t, "fallback", observe.BackendName(l))
}

// TestStateHooks: every hook of WithStateHook is told, in the order given, past a nil one
// and past one that panics.
func TestStateHooks(t *testing.T) {
	var order []string
	hook := func(name string) func(fallback.StateChange) {
		return func(fallback.StateChange) { order = append(order, name) }
	}
	r := newRig(t, fallback.WithFailureThreshold(1), fallback.WithStateHook(hook("a")), fallback.WithStateHook(nil),
		fallback.WithStateHook(broken{}.ObserveBreaker), fallback.WithStateHook(hook("b")))
	r.primary.fail(nil)
	require.NotPanics(t, func() { r.allow(t, roomy) })
	require.Equal(t, fallback.Open, r.l.State())
	changes, _ := r.hooks.seen()
	assert.Equal(t, []string{opened}, changes)
	assert.Equal(t, []string{"a", "b"}, order)
}

// countingHandler is a slog.Handler that counts the breaker's records: those whose breaker
// group says degraded=true, those that say degraded=false (recovered), and all of them.
type countingHandler struct {
	mu                           sync.Mutex
	degraded, recovered, records int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *countingHandler) WithGroup(string) slog.Handler            { return h }

func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records++
	r.Attrs(func(a slog.Attr) bool {
		if a.Key != "breaker" {
			return true
		}
		for _, f := range a.Value.Resolve().Group() {
			if f.Key == "degraded" && f.Value.Bool() {
				h.degraded++
			} else if f.Key == "degraded" {
				h.recovered++
			}
		}
		return true
	})
	return nil
}

// TestOutageLogsOnce: a 10-second outage, the breaker probing every 100 ms, a request every
// 10 ms, logged through the hook README.md and the package documentation recommend: one
// record when the breaker opens (degraded) and one when it closes (recovered), not one for
// each of the 100 probes' open ↔ half-open.
func TestOutageLogsOnce(t *testing.T) {
	h := &countingHandler{}
	logger := slog.New(h)
	changes := 0
	r := newRig(t, fallback.WithCooldown(100*ms), fallback.WithStateHook(func(c fallback.StateChange) {
		changes++
		if c.Edge() { // as README.md
			logger.Warn("rate limiter", "breaker", c)
		}
	}))
	r.primary.fail(nil)
	for elapsed := time.Duration(0); elapsed < 10*time.Second; elapsed += 10 * ms {
		r.allow(t, roomy)
		r.clock.Advance(10 * ms)
	}
	require.Equal(t, fallback.Open, r.l.State())
	r.primary.down.Store(false)
	r.clock.Advance(100 * ms)
	r.allow(t, roomy)
	require.Equal(t, fallback.Closed, r.l.State())

	// Opened by the fifth failure, at 40 ms; 99 failed probes, at 140 ms, 240 ms, … 9,940 ms,
	// each half-open and open again; the probe at 10,100 ms half-open, then closed.
	require.Equal(t, 1+2*99+2, changes)
	require.Equal(t, 1, h.degraded)
	require.Equal(t, 1, h.recovered)
	require.Equal(t, 2, h.records)
}
