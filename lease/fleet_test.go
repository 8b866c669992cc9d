package lease_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/lease"
	"github.com/sluice-go/ratelimit/local"
)

// The fleet: k = 8 instances, each with its own client, on one key of 2,000/s with a burst
// of 200, asked 8,000 times a second (4× the rate) for 10 s, in steps of 1 ms. A chunk is at
// most Burst/(4k) = 6 tokens, so the bound of any 1 s window is Burst + Rate·1 s + k·c =
// 200 + 2,000 + 48 = 2,248.
const (
	fleetK      = 8
	fleetRate   = 2000
	fleetBurst  = 200
	fleetChunk  = fleetBurst / (lease.CapShare * fleetK)
	fleetBound  = fleetBurst + fleetRate + fleetK*fleetChunk
	fleetDemand = 8 // requests per 1 ms step: 8,000/s
	fleetSteps  = 10000
)

// fleet is the instances of a run, nil while one is not running.
type fleet struct {
	w       *world
	limit   ratelimit.Limit
	members []ratelimit.Limiter
	errors  int
	demand  int // requests per step: fleetDemand unless set
	every   int // if not 0, the demand comes all at once every that many steps
}

func newFleet(w *world, running int) *fleet {
	f := &fleet{w: w, limit: ratelimit.Limit{Rate: fleetRate, Burst: fleetBurst}, members: make([]ratelimit.Limiter, fleetK)}
	for i := range running {
		f.join(i)
	}
	return f
}

func (f *fleet) join(i int) { f.members[i], _ = f.w.instance(lease.WithInstances(fleetK)) }

func (f *fleet) leave(i int) {
	require.NoError(f.w.t, f.members[i].Close())
	f.members[i] = nil
}

// run plays the steps, calling at[step] before a step if there is one, and returns how
// many requests were admitted at each step. The step's requests go to the running
// instances in turn.
func (f *fleet) run(at map[int]func()) []int {
	admitted := make([]int, fleetSteps)
	next := 0
	for step := range fleetSteps {
		if do := at[step]; do != nil {
			do()
		}
		demand := f.demand
		switch {
		case demand == 0:
			demand = fleetDemand
		case f.every > 0 && step%f.every != 0:
			demand = 0
		}
		for range demand {
			for f.members[next%fleetK] == nil {
				next++
			}
			res, err := f.members[next%fleetK].Allow(context.Background(), "hot", f.limit)
			next++
			if err != nil {
				f.errors++
				continue
			}
			if res.Allowed {
				admitted[step]++
			}
		}
		time.Sleep(time.Millisecond) // and the grants in flight land: see world
	}
	return admitted
}

// windows returns the admissions of every window of 1,000 steps (1 s), by first step.
func windows(admitted []int) []int {
	var sums []int
	sum := 0
	for i, n := range admitted {
		sum += n
		if i >= 1000 {
			sum -= admitted[i-1000]
		}
		if i >= 999 {
			sums = append(sums, sum)
		}
	}
	return sums
}

func total(admitted []int) int {
	n := 0
	for _, a := range admitted {
		n += a
	}
	return n
}

// TestFleetBound: 8 instances at 4× overload for 10 s. Every 1 s window admits at most the
// bound, the whole run at least 97 % of Rate·T (19,400: the rate's 20,000 and the burst's
// 200 are there to take), and Redis runs at most one script per chunk of the decisions
// (80,000 / 6), counted by Redis itself.
func TestFleetBound(t *testing.T) {
	inWorld(t, nil, func(w *world) {
		f := newFleet(w, fleetK)
		before, err := w.server.ScriptCalls()
		require.NoError(w.t, err)
		admitted := f.run(nil)
		after, err := w.server.ScriptCalls()
		require.NoError(w.t, err)
		require.Zero(w.t, f.errors)
		for first, n := range windows(admitted) {
			require.LessOrEqual(w.t, n, fleetBound, "the 1 s window from %d ms", first)
		}
		assert.GreaterOrEqual(w.t, total(admitted), fleetRate*fleetSteps/1000*97/100)
		assert.LessOrEqual(w.t, after-before, int64(fleetDemand*fleetSteps/fleetChunk))
		w.t.Logf("admitted %d of %d asked, most in a 1 s window %d (bound %d), %d scripts",
			total(admitted), fleetDemand*fleetSteps, maxOf(windows(admitted)), fleetBound, after-before)
	})
}

// TestFleetJoinLeave: 4 instances, 4 more joining at 3 s, 3 leaving (Close) at 6 s: the
// bound holds in every window and the run still admits 97 % of Rate·T.
func TestFleetJoinLeave(t *testing.T) {
	inWorld(t, nil, func(w *world) {
		f := newFleet(w, 4)
		admitted := f.run(map[int]func(){
			3000: func() {
				for i := 4; i < 8; i++ {
					f.join(i)
				}
			},
			6000: func() {
				for i := 1; i < 4; i++ {
					f.leave(i)
				}
			},
		})
		require.Zero(w.t, f.errors)
		for first, n := range windows(admitted) {
			require.LessOrEqual(w.t, n, fleetBound, "the 1 s window from %d ms", first)
		}
		assert.GreaterOrEqual(w.t, total(admitted), fleetRate*fleetSteps/1000*97/100)
	})
}

// TestFleetRedisLosesState: Redis loses its data at 5 s (FLUSHALL, as a restart of a Redis
// that keeps nothing on disk): the bucket is full again while the instances still hold
// what they took from the old one, so the windows that hold the loss may admit one Burst
// more (the caveat of docs/leases.md), and every other window keeps the bound.
func TestFleetRedisLosesState(t *testing.T) {
	inWorld(t, nil, func(w *world) {
		f := newFleet(w, fleetK)
		admitted := f.run(map[int]func(){5000: func() {
			_, err := w.server.Do("FLUSHALL")
			require.NoError(w.t, err)
		}})
		require.Zero(w.t, f.errors)
		for first, n := range windows(admitted) {
			bound := fleetBound
			if first <= 5000 && 5000 < first+1000 {
				bound += fleetBurst
			}
			require.LessOrEqual(w.t, n, bound, "the 1 s window from %d ms", first)
		}
		w.t.Logf("most in a window holding the loss: %d (bound %d)", maxOf(windows(admitted)[4001:5001]), fleetBound+fleetBurst)
	})
}

// TestFleetRedisRestarts: Redis stops at 5 s and comes back empty at 6 s, each instance in
// fallback over a local share of the limit (Rate/k, Burst/k). During the outage the
// instances spend what they hold, then the shares decide: at most Burst + Rate·W together,
// so a window that holds the outage admits from two buckets, one more Burst (the caveat
// of docs/leases.md), and from 7 s on the bound holds again. Nothing fails: fallback answers.
func TestFleetRedisRestarts(t *testing.T) {
	server := redistest.NewServer(t)
	// The bubble's clock must not move while the server stops or starts: it runs outside,
	// and the bubble waits for it on channels made outside.
	do, done := make(chan func()), make(chan struct{})
	go func() {
		for f := range do {
			f()
			done <- struct{}{}
		}
	}()
	t.Cleanup(func() { close(do) })
	outside := func(f func()) { do <- f; <-done }
	inWorld(t, server, func(w *world) {
		f := &fleet{w: w, limit: ratelimit.Limit{Rate: fleetRate, Burst: fleetBurst},
			members: make([]ratelimit.Limiter, fleetK)}
		for i := range fleetK {
			l, _ := w.instance(lease.WithInstances(fleetK))
			share := local.New()
			w.t.Cleanup(func() { _ = share.Close() })
			f.members[i] = fallback.New(l, share, fallback.WithInstances(fleetK))
		}
		admitted := f.run(map[int]func(){
			5000: func() { outside(server.Stop) },
			6000: func() { outside(func() { server = server.Restart(t) }) },
		})
		require.Zero(w.t, f.errors)
		for first, n := range windows(admitted) {
			bound := fleetBound
			if first < 7000 && first+1000 > 5000 {
				bound += fleetBurst
			}
			require.LessOrEqual(w.t, n, bound, "the 1 s window from %d ms", first)
		}
		assert.GreaterOrEqual(w.t, total(admitted), fleetRate*fleetSteps/1000*97/100)
		w.t.Logf("admitted %d, most in a window holding the outage %d (bound %d), after it %d (bound %d)",
			total(admitted), maxOf(windows(admitted)[4001:7000]), fleetBound+fleetBurst,
			maxOf(windows(admitted)[7000:]), fleetBound)
	})
}

func maxOf(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// TestFleetShards: the fleet on a key split over 4 shards of 500/s and a burst of 50 each,
// at 4× the rate and at the rate. A chunk is then at most 50/(4k) tokens, 1, so the bound
// is below the unsplit key's; it holds in every window. The admitted share is what the
// split costs: a shard's refill is lost while it is full and the fleet draws from another,
// and a request of more than a shard's burst is never admitted.
func TestFleetShards(t *testing.T) {
	for _, c := range []struct {
		shards, demand, every int
		// of what the limit lets through: Rate·T + Burst, or the demand
		least float64
	}{
		{1, fleetDemand, 0, 0.97}, {4, fleetDemand, 0, 0.97},
		// The rate's worth in bursts of 200 every 100 ms: the shards are drained unevenly.
		{1, 200, 100, 0.97}, {4, 200, 100, 0.97},
	} {
		t.Run(fmt.Sprintf("%d shards, %d every %d ms", c.shards, c.demand, max(c.every, 1)), func(t *testing.T) {
			inWorld(t, nil, func(w *world) {
				f := &fleet{w: w, limit: ratelimit.Limit{Rate: fleetRate, Burst: fleetBurst},
					members: make([]ratelimit.Limiter, fleetK), demand: c.demand, every: c.every}
				for i := range fleetK {
					f.members[i], _ = w.instance(lease.WithInstances(fleetK), lease.WithShards(c.shards))
				}
				admitted := f.run(nil)
				require.Zero(w.t, f.errors)
				chunk := fleetBurst / c.shards / (lease.CapShare * fleetK)
				bound := fleetBurst + fleetRate + fleetK*chunk
				for first, n := range windows(admitted) {
					require.LessOrEqual(w.t, n, bound, "the 1 s window from %d ms", first)
				}
				most := min(fleetRate*fleetSteps/1000+fleetBurst, c.demand*fleetSteps/max(c.every, 1))
				share := float64(total(admitted)) / float64(most)
				assert.GreaterOrEqual(w.t, share, c.least)
				w.t.Logf("%d shards, %d every %d ms: admitted %d, %.1f %% of what the limit lets through",
					c.shards, c.demand, max(c.every, 1), total(admitted), 100*share)
			})
		})
	}
}
