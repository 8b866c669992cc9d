package local_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/local"
)

// backend simulates a service whose latency is flat up to a knee of concurrency and rises
// steeply past it, driven by a local.Limiter with an adaptive limit on a fake clock. Demand is
// unbounded: after every completion, callers take every free permit (TryAcquire). One
// goroutine, no timers: every run is the same.
type backend struct {
	t        *testing.T
	l        *local.Limiter
	now      time.Time
	knee     int
	max      int
	inflight []job
}

type job struct {
	p    concurrency.Permit
	done time.Time
}

const (
	simBase   = 10 * time.Millisecond // latency up to the knee
	simTarget = 15 * time.Millisecond // AIMD.Target: the first request past the knee misses it
)

// latency is the service's latency for a request that starts with c requests in flight,
// itself included: simBase up to the knee, then another simBase per request beyond it.
func (b *backend) latency(c int) time.Duration {
	if c <= b.knee {
		return simBase
	}
	return simBase + time.Duration(c-b.knee)*simBase
}

func newBackend(t *testing.T, knee, max int, a concurrency.AIMD) *backend {
	b := &backend{t: t, now: time.Unix(1e9, 0), knee: knee, max: max}
	b.l = local.New(
		local.WithAdaptive(a),
		local.WithClock(func() time.Time { return b.now }),
	)
	t.Cleanup(func() { b.l.Close() })
	b.fill()
	return b
}

// fill takes every free permit, each a request that completes after its latency.
func (b *backend) fill() {
	for {
		p, ok, err := b.l.TryAcquire(b.t.Context(), "svc", b.max)
		require.NoError(b.t, err)
		if !ok {
			return
		}
		b.inflight = append(b.inflight, job{p: p, done: b.now.Add(b.latency(len(b.inflight) + 1))})
	}
}

// step completes the earliest request (the first started among ties), moving the clock to
// its end, refills, and returns the limit then in force.
func (b *backend) step() int {
	first := 0
	for i, j := range b.inflight {
		if j.done.Before(b.inflight[first].done) {
			first = i
		}
	}
	j := b.inflight[first]
	b.inflight = append(b.inflight[:first], b.inflight[first+1:]...)
	b.now = j.done
	j.p.Release()
	b.fill()
	limit, ok := b.l.Limit("svc")
	require.True(b.t, ok)
	return limit
}

// settle runs steps until the limit has stayed within 10% of want for a further `hold`
// steps, and returns how many steps it took to enter that band for good; it fails the
// test if that takes more than within steps, or if the limit ever leaves [lo, hi].
func (b *backend) settle(want, within, hold, lo, hi int) int {
	b.t.Helper()
	band := func(v int) bool { return 10*v >= 9*want && 10*v <= 11*want }
	entered := -1
	for i := 0; ; i++ {
		limit := b.step()
		require.GreaterOrEqual(b.t, limit, lo, "step %d", i)
		require.LessOrEqual(b.t, limit, hi, "step %d", i)
		switch {
		case !band(limit):
			entered = -1
		case entered < 0:
			entered = i
		case i-entered >= hold:
			return entered
		}
		require.Less(b.t, i, within+hold, "the limit is %d, not within 10%% of %d after %d steps", limit, want, i)
	}
}

func TestAIMDFindsTheKnee(t *testing.T) {
	a := concurrency.AIMD{Min: 5, Initial: 10, Target: simTarget}
	b := newBackend(t, 40, 100, a)

	// From 10, slow start overshoots the knee (each success adds 1 until the first drop);
	// drops then bring the limit down by a tenth per round trip, and additive increase
	// saw-tooths it between ⌊41 · 0.9⌋ = 36 and 41.
	// The run is deterministic: the step counts are exact, and the bounds below are the
	// documented ones (https://github.com/sluice-go/ratelimit/blob/main/docs/concurrency.md).
	steps := b.settle(40, 400, 5000, 5, 100)
	assert.Equal(t, 353, steps)

	// The service gets faster: the limit climbs to the new knee, by one per limit's worth
	// of completions.
	b.knee = 60
	steps = b.settle(60, 900, 5000, 5, 100)
	assert.Equal(t, 837, steps)

	// And slower: drops take it down again.
	b.knee = 20
	steps = b.settle(20, 400, 5000, 5, 100)
	assert.Equal(t, 393, steps)
}

func TestAIMDOutcomes(t *testing.T) {
	l := local.New(local.WithAdaptive(concurrency.AIMD{Initial: 20}))
	defer l.Close()
	limit := func() int {
		v, ok := l.Limit("k")
		require.True(t, ok)
		return v
	}
	var ps []concurrency.Permit
	for range 10 { // half the limit: each permit is granted busy
		p, err := l.Acquire(t.Context(), "k", 100)
		require.NoError(t, err)
		ps = append(ps, p)
	}
	ps[0].ReleaseWith(concurrency.Dropped)
	assert.Equal(t, 18, limit(), "⌊20 · 0.9⌋")
	ps[1].ReleaseWith(concurrency.Dropped)
	assert.Equal(t, 18, limit(), "granted before the decrease: no second one")
	ps[2].ReleaseWith(concurrency.Ignored)
	assert.Equal(t, 18, limit())
	p, err := l.Acquire(t.Context(), "k", 100)
	require.NoError(t, err)
	p.ReleaseWith(concurrency.Dropped)
	assert.Equal(t, 16, limit(), "granted after it: ⌊18 · 0.9⌋")
	ps[3].Release()
	assert.Equal(t, 16, limit(), "after a drop, one success adds 1/limit only")
	p.ReleaseWith(concurrency.Dropped)
	assert.Equal(t, 16, limit(), "a second release changes nothing")
	for _, p := range ps[4:] {
		p.Release()
	}
	p, err = l.Acquire(t.Context(), "k", 4)
	require.NoError(t, err)
	defer p.Release()
	assert.Equal(t, 4, limit(), "a call's max bounds the limit")
}

func TestAIMDValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    concurrency.AIMD
		ok   bool
	}{
		{"zero", concurrency.AIMD{}, true},
		{"full", concurrency.AIMD{Min: 2, Initial: 4, Target: time.Second, Backoff: 0.5}, true},
		{"negative min", concurrency.AIMD{Min: -1}, false},
		{"initial below min", concurrency.AIMD{Min: 5, Initial: 4}, false},
		{"negative target", concurrency.AIMD{Target: -1}, false},
		{"backoff 1", concurrency.AIMD{Backoff: 1}, false},
		{"negative backoff", concurrency.AIMD{Backoff: -0.5}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.a.Validate()
			if tc.ok {
				assert.NoError(t, err)
				assert.NotPanics(t, func() { local.New(local.WithAdaptive(tc.a)) })
				return
			}
			assert.Error(t, err)
			assert.Panics(t, func() { local.New(local.WithAdaptive(tc.a)) })
		})
	}
}

func TestAIMDBounds(t *testing.T) {
	// Every request misses the target: the limit falls to Min and stays there.
	b := newBackend(t, 0, 100, concurrency.AIMD{Min: 3, Initial: 50, Target: time.Millisecond})
	for i := range 1000 {
		limit := b.step()
		require.GreaterOrEqual(t, limit, 3, "step %d", i)
		require.LessOrEqual(t, limit, 50, "step %d", i)
	}
	limit, _ := b.l.Limit("svc")
	assert.Equal(t, 3, limit)

	// Every request is fast: the limit rises to the call's max and stays there.
	b = newBackend(t, 1000, 30, concurrency.AIMD{Min: 3, Initial: 5, Target: time.Second})
	for i := range 1000 {
		limit := b.step()
		require.GreaterOrEqual(t, limit, 5, "step %d", i)
		require.LessOrEqual(t, limit, 30, "step %d", i)
	}
	limit, _ = b.l.Limit("svc")
	assert.Equal(t, 30, limit)
}
