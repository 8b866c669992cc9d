package faults

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/distributed"
)

// admission is what one limited key was admitted during a run, against GCRA's bound for its
// span: Burst + Rate·span from the first request (the warm-up) to the end of its last.
type admission struct {
	affected            bool
	allowance           float64
	byRedis, admitted   int // allowed by the primary; answered 200 (Redis or the local limiter)
	byRedisSinceFault   int // allowed by the primary since the fault began
	redisExcess, excess float64
}

// admissions returns the admission of every limited key.
func (r *faultRun) admissions() []admission {
	last := make([]time.Time, len(r.keys.names))
	admitted := make([]int, len(r.keys.names))
	for _, x := range r.samples {
		if e := x.at.Add(x.took); e.After(last[x.key]) {
			last[x.key] = e
		}
		if x.code == 200 {
			admitted[x.key]++
		}
	}
	var out []admission
	for i, name := range r.keys.names {
		if !r.keys.limited(i) {
			continue
		}
		a := admission{
			affected:          r.affected[i],
			allowance:         float64(keyedLimit.Burst) + keyedLimit.Rate*last[i].Sub(r.warm).Seconds(),
			byRedis:           r.primary.tally(limiterKey(name)).allowed,
			byRedisSinceFault: r.primary.tally(limiterKey(name)).allowed - r.atInject[name].allowed,
			admitted:          admitted[i] + 1, // and the warm-up
		}
		a.redisExcess = float64(a.byRedis) - a.allowance
		a.excess = float64(a.admitted) - a.allowance
		out = append(out, a)
	}
	return out
}

// excesses returns the least and the largest excess by Redis, and the largest in all, over
// the keys affected or not, and how many keys that is.
func excesses(as []admission, affected bool) (leastRedis, mostRedis, most float64, n int) {
	leastRedis, mostRedis, most = 1e9, -1e9, -1e9
	for _, a := range as {
		if a.affected == affected {
			leastRedis, mostRedis = min(leastRedis, a.redisExcess), max(mostRedis, a.redisExcess)
			most, n = max(most, a.excess), n+1
		}
	}
	return leastRedis, mostRedis, most, n
}

// charges is what Redis kept of the counter keys' charges, read after the load through
// client: the charges the primary acknowledged (allowed), those Redis holds (stored), and
// the calls that failed (whose charge may or may not have been taken).
type charges struct {
	acked, stored, failed int64
	// forgotten is what Redis lost of the acknowledged charges, at least: the sum over the
	// keys of acked − stored where positive (a failed call that Redis ran hides one).
	forgotten int64
}

// charges reads the counter keys of r, affected or not, through client.
func (r *faultRun) charges(t *testing.T, client redis.Scripter, affected bool) charges {
	t.Helper()
	var c charges
	for i, name := range r.keys.names {
		if r.keys.limited(i) || r.affected[i] != affected {
			continue
		}
		tl := r.primary.tally(limiterKey(name))
		stored := chargedVia(t, client, limiterKey(name))
		c.acked += int64(tl.allowed)
		c.failed += int64(tl.failed)
		c.stored += stored
		c.forgotten += max(0, int64(tl.allowed)-stored)
		require.LessOrEqual(t, stored, int64(tl.allowed+tl.failed), "Redis holds more charges of a counter key than the primary was called for it: a call charged twice")
	}
	return c
}

// chargedVia returns how many tokens Redis has taken from key's counter bucket, itself
// taking one more (counted) through client.
func chargedVia(t *testing.T, client redis.Scripter, key string) int64 {
	t.Helper()
	l, err := distributed.New(client, distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)
	res, err := l.Allow(context.Background(), key, counter)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	return int64(counter.Burst-res.Remaining) - 1
}
