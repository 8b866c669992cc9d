package ratelimittest

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// The rules of priorities beside the other calls: concurrency, Peek and Refund, AllowAll,
// and a reference model on random timelines.

// priorityConcurrency: 64 goroutines of mixed priorities on one bucket whose clock stands
// still. Burst 100 with a Normal reserve of 0.2: 20 tokens kept from Normal, 50 from
// Sheddable. 16 goroutines make one Critical request each, fewer than the Normal reserve,
// beside 16 making 8 Normal requests each and 32 making 8 Sheddable ones: every Critical
// request passes, whatever the order, since only Critical requests can take the bucket below
// 20 tokens; Sheddable ones take at most 50; and Normal ones, more than the 80 tokens they
// may take, leave the bucket at their reserve or below, so that between 4 and 20 tokens are
// left, exactly as many as Critical requests can then take.
func priorityConcurrency(t testing.TB, h harness) {
	l := h.Reserves(priority.Reserves{Normal: 0.2})
	limit := ratelimit.Limit{Rate: 1, Burst: 100}
	const goroutines, criticals, attempts = 64, 16, 8
	var admitted [3]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	start := make(chan struct{})
	run := func(p priority.Level, count int) {
		<-start
		ctx := priority.With(context.Background(), p)
		for range count {
			res, err := l.Allow(ctx, "hot", limit)
			if err != nil {
				errs <- err
				return
			}
			if res.Allowed {
				admitted[p].Add(1)
			}
		}
	}
	for i := range goroutines {
		switch {
		case i%4 == 0: // 16, spread among the others
			wg.Go(func() { run(critical, 1) })
		case i%2 == 0:
			wg.Go(func() { run(normal, attempts) })
		default:
			wg.Go(func() { run(sheddable, attempts) })
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	c, n, s := admitted[critical].Load(), admitted[normal].Load(), admitted[sheddable].Load()
	require.Equal(t, int64(criticals), c, "a Critical request was denied while the reserve held")
	require.LessOrEqual(t, s, int64(50), "Sheddable requests took from the Sheddable reserve")
	left := 100 - (c + n + s)
	require.True(t, 4 <= left && left <= 20, "%d tokens left (critical %d, normal %d, sheddable %d)", left, c, n, s)

	if ins, ok := ratelimit.As[ratelimit.Inspector](l); ok {
		// What is left, read without taking it: Critical would take one, leaving left − 1.
		res, err := ins.Peek(context.Background(), "hot", limit, 1)
		require.NoError(t, err)
		require.True(t, res.Allowed)
		require.Equal(t, int(left-1), res.Remaining)
	}
	// Exactly what is left passes, at Critical, and not one token more: 100 in all.
	steps := repeat(critical, int(left), true, int(left-1))
	playOutcomes(t, l, "hot", limit, append(steps, outcome{p: critical}, outcome{p: normal}))
}

// priorityInspector: Peek answers what AllowN would at the priority of its context, and
// Refund answers as Peek for one token at it.
func priorityInspector(t testing.TB, h harness) {
	ins, ok := ratelimit.As[ratelimit.Inspector](h.Limiter)
	if !ok {
		return // a backend without Inspector: nothing to check
	}
	bg := context.Background()
	playOutcomes(t, h.Limiter, "peek", ten, []outcome{{p: critical, n: 5, allowed: true, remaining: 5}})
	for _, p := range []priority.Level{sheddable, normal, critical} {
		ctx := priority.With(bg, p)
		for _, n := range []int{1, 2} {
			peeked, err := ins.Peek(ctx, "peek", ten, n)
			require.NoError(t, err)
			// The bucket holds 5: Sheddable (R 5) is denied, Normal (R 1) and Critical pass.
			require.Equal(t, p != sheddable, peeked.Allowed, "%v n=%d", p, n)
			if !peeked.Allowed {
				require.Zero(t, peeked.Remaining)
				require.Positive(t, peeked.RetryAfter)
			}
			// Peek took nothing: a second Peek answers alike.
			again, err := ins.Peek(ctx, "peek", ten, n)
			require.NoError(t, err)
			require.Equal(t, peeked, again)
		}
	}
	// The Sheddable AllowN is the Sheddable Peek.
	shed := priority.With(bg, sheddable)
	peeked, err := ins.Peek(shed, "peek", ten, 1)
	require.NoError(t, err)
	got, err := h.Limiter.Allow(shed, "peek", ten)
	require.NoError(t, err)
	require.Equal(t, peeked, got)
	// Normal takes one (4 left, 3 of them to Normal); a refund of it at Sheddable answers as
	// a Sheddable Peek: 5 held, none of them Sheddable's.
	playOutcomes(t, h.Limiter, "peek", ten, []outcome{{p: normal, allowed: true, remaining: 3}})
	refunded, err := ins.Refund(shed, "peek", ten, 1, ratelimit.Charge{})
	require.NoError(t, err)
	peeked, err = ins.Peek(shed, "peek", ten, 1)
	require.NoError(t, err)
	require.Equal(t, peeked, refunded)
	require.False(t, refunded.Allowed)
	require.Zero(t, refunded.Remaining)
	// A Normal Peek sees 4 of the 5 tokens: 3 left to it after one.
	peeked, err = ins.Peek(priority.With(bg, normal), "peek", ten, 1)
	require.NoError(t, err)
	require.True(t, peeked.Allowed)
	require.Equal(t, 3, peeked.Remaining)
}

// priorityAllowAll: AllowAll decides every request at the priority of its context, each
// keeping its own bucket's reserve, all or nothing.
func priorityAllowAll(t testing.TB, h harness) {
	ml, ok := ratelimit.As[ratelimit.MultiLimiter](h.Limiter)
	if !ok {
		return // a backend without MultiLimiter: nothing to check
	}
	four := ratelimit.Limit{Rate: 1, Burst: 4} // Sheddable keeps ⌊2⌋ back
	shed := priority.With(context.Background(), sheddable)
	all := func(ctx context.Context, na, nb int) ratelimit.MultiResult {
		t.Helper()
		mr, err := ml.AllowAll(ctx, []ratelimit.Request{
			{Key: "a", Limit: ten, N: na, Name: "ten"},
			{Key: "b", Limit: four, N: nb, Name: "four"},
		})
		require.NoError(t, err)
		return mr
	}
	// Sheddable takes what it may of both: 5 of 10 and 2 of 4.
	mr := all(shed, 5, 2)
	require.True(t, mr.Allowed)
	require.Equal(t, []int{0, 0}, []int{mr.Results[0].Remaining, mr.Results[1].Remaining})
	// Then any Sheddable request is denied, each Result as AllowN alone would say.
	mr = all(shed, 1, 1)
	require.False(t, mr.Allowed)
	for i, res := range mr.Results {
		require.False(t, res.Allowed, "request %d", i)
		require.Zero(t, res.Remaining, "request %d", i)
		require.Positive(t, res.RetryAfter, "request %d", i)
	}
	// Normal passes on the first (5 left, 1 kept back), not on the second (2 left, ⌊0.4⌋ = 0
	// kept back, 3 asked): neither is charged.
	mr = all(priority.With(context.Background(), normal), 1, 3)
	require.False(t, mr.Allowed)
	require.True(t, mr.Results[0].Allowed)
	require.False(t, mr.Results[1].Allowed)
	require.Equal(t, 1, mr.Binding)
	// Critical takes everything that is left: 5 and 2.
	mr = all(context.Background(), 5, 2)
	require.True(t, mr.Allowed)
	require.Equal(t, []int{0, 0}, []int{mr.Results[0].Remaining, mr.Results[1].Remaining})
}

// priorityAgainstModel plays random timelines of random priorities against the reference
// models of the window algorithms, the sliding log and the leaky bucket (the token bucket
// decides as the leaky bucket does; the ladder pins it), each request decided as under
// Burst less its reserve: the "Burst − R" rule, checked on thousands of states.
func priorityAgainstModel(t testing.TB, h harness) {
	rng := rand.New(rand.NewPCG(18, 18))
	prioritized := func(limit ratelimit.Limit, n int) (priority.Level, int) {
		p := priority.Level(rng.IntN(3))
		return p, min(n, usable(limit, p))
	}
	switch h.Algorithm {
	case ratelimit.FixedWindow, ratelimit.SlidingWindowCounter:
		now := NewClock().Now()
		advance := h.Advance
		h.Advance = func(d time.Duration) {
			advance(d)
			now = now.Add(d)
		}
		for i, limit := range []ratelimit.Limit{{Rate: 5, Burst: 8}, {Rate: 0.1, Burst: 6}, {Rate: 7, Burst: 50}} {
			arrivals := randomWindowArrivals(uint64(i+30), limit, 300)
			for j := range arrivals {
				arrivals[j].Priority, arrivals[j].N = prioritized(limit, arrivals[j].N)
			}
			admitted, denied := checkWindowModel(t, h, now, "prio"+limit.String(), limit, arrivals)
			require.Positive(t, admitted, "%v", limit)
			require.Positive(t, denied, "%v", limit)
		}
	case ratelimit.SlidingWindowLog, ratelimit.LeakyBucket:
		limit := ratelimit.Limit{Rate: 10, Burst: 9} // W = 900 ms
		ops := randomOps(31, 300, 150*ms, 3)
		for j := range ops {
			ops[j].Priority, ops[j].N = prioritized(limit, ops[j].N)
		}
		if h.Algorithm == ratelimit.SlidingWindowLog {
			checkSlidingLog(t, h, limit, ops)
		} else {
			checkLeakyBucket(t, h, limit, ops)
		}
	}
}
