package distributed_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// The test clock reads 2026-01-01, 2192 days after 2020-01-01: at one token a second, a
// bucket's TAT, in tokens, is this plus the tokens it lacks.
const nowInSeconds = 2192 * 86400

// TestAllowAllConcurrentRedisState: 64 goroutines × 8 AllowAll{global 100, per user 10} over
// 20 users, then the buckets are read from Redis, not from the Results: the global TAT is
// exactly 100 tokens ahead, each user's exactly as many as it was allowed, at most 10, and
// their sum is 100: the denials took nothing. The clock does not move, so nothing refills.
func TestAllowAllConcurrentRedisState(t *testing.T) {
	server := redistest.NewServer(t)
	prefix := uniquePrefix()
	l := newLimiter(t, newClient(t, server.Addr()), ratelimittest.NewClock(), distributed.WithPrefix(prefix))
	global := ratelimit.Limit{Rate: 1, Burst: 100}
	perUser := ratelimit.Limit{Rate: 1, Burst: 10}

	const goroutines, attempts, users = 64, 8, 20
	var mu sync.Mutex
	allowed := make(map[int]int)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			u := g % users
			for range attempts {
				mr, err := l.AllowAll(context.Background(), []ratelimit.Request{
					{Key: "global", Limit: global, Name: "global"},
					{Key: "user:" + strconv.Itoa(u), Limit: perUser, Name: "user"},
				})
				if !assert.NoError(t, err) {
					return
				}
				if mr.Allowed {
					mu.Lock()
					allowed[u]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()

	tatAhead := func(key string) int {
		t.Helper()
		v, err := server.Do("GET", key)
		if v == nil && err == nil {
			return 0 // never charged: a missing key is a full bucket
		}
		require.NoError(t, err)
		tat, err := strconv.ParseFloat(v.(string), 64)
		require.NoError(t, err)
		ttl, err := server.Do("PTTL", key)
		require.NoError(t, err)
		require.Positive(t, ttl, "every written key expires")
		return int(tat) - nowInSeconds
	}
	assert.Equal(t, 100, tatAhead(prefix+"global:tb:1:100"))
	var sum, total int
	for u := range users {
		debit := tatAhead(fmt.Sprintf("%suser:%d:tb:1:10", prefix, u))
		assert.Equal(t, allowed[u], debit, "user %d: its bucket lacks what it was allowed", u)
		assert.LessOrEqual(t, debit, 10)
		sum += debit
		total += allowed[u]
	}
	assert.Equal(t, 100, total)
	assert.Equal(t, 100, sum)
}

// TestAllowAllOneRoundTrip: three limits whose keys share a slot are one script, on a single
// node and on a Cluster (keys with one hash tag); each bucket was charged.
func TestAllowAllOneRoundTrip(t *testing.T) {
	t.Parallel()
	reqs := []ratelimit.Request{
		{Key: "{user:42}:second", Limit: ratelimit.PerSecond(10), Name: "second"},
		{Key: "{user:42}:minute", Limit: ratelimit.PerMinute(100), Name: "minute"},
		{Key: "{user:42}:hour", Limit: ratelimit.PerHour(1000), Name: "hour"},
	}
	check := func(t *testing.T, l *distributed.Limiter, calls func() int64) {
		// The first call on a server loads the script (NOSCRIPT, then EVAL): not counted.
		assert.Equal(t, reqs[0].Limit.Burst-1, peekRemaining(t, l, reqs[0].Key, reqs[0].Limit))
		before := calls()
		mr, err := l.AllowAll(context.Background(), reqs)
		require.NoError(t, err)
		require.True(t, mr.Allowed)
		assert.Equal(t, int64(1), calls()-before, "one EVALSHA")
		for i, r := range reqs {
			assert.Equal(t, r.Limit.Burst-1, mr.Results[i].Remaining, r.Name)
			assert.Equal(t, r.Limit.Burst-2, peekRemaining(t, l, r.Key, r.Limit), "%s was charged", r.Name)
		}
		assert.Equal(t, 0, mr.Binding, "9 left of 10, the fewest")
	}
	t.Run("Single", func(t *testing.T) {
		server := redistest.NewServer(t)
		l := newLimiter(t, newClient(t, server.Addr()), ratelimittest.NewClock())
		check(t, l, func() int64 { return scriptCalls(t, server) })
	})
	t.Run("Cluster", func(t *testing.T) {
		cluster := redistest.NewCluster(t)
		l := newLimiter(t, newClusterClientOf(t, cluster), ratelimittest.NewClock())
		check(t, l, func() int64 {
			var n int64
			for _, node := range cluster.Nodes() {
				n += scriptCalls(t, node)
			}
			return n
		})
	})
}

func scriptCalls(t *testing.T, server *redistest.Server) int64 {
	t.Helper()
	n, err := server.ScriptCalls()
	require.NoError(t, err)
	return n
}

// peekRemaining returns what AllowN(1) would leave.
func peekRemaining(t *testing.T, l *distributed.Limiter, key string, limit ratelimit.Limit) int {
	t.Helper()
	res, err := l.Peek(context.Background(), key, limit, 1)
	require.NoError(t, err)
	return res.Remaining
}

// TestAllowAllForeignValue: a bucket holding a value no script writes is decided as a new
// one, in the same decision as the others, and its value is replaced.
func TestAllowAllForeignValue(t *testing.T) {
	server := redistest.NewServer(t)
	prefix := uniquePrefix()
	l := newLimiter(t, newClient(t, server.Addr()), ratelimittest.NewClock(), distributed.WithPrefix(prefix))
	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	_, err := server.Do("SET", prefix+"bad:tb:1:2", "not a number")
	require.NoError(t, err)
	res, err := l.AllowAll(context.Background(), []ratelimit.Request{{Key: "good", Limit: limit}, {Key: "bad", Limit: limit}})
	require.NoError(t, err)
	require.True(t, res.Allowed)
	// Two new buckets, each charged one token of two: back in 1 s.
	fresh := ratelimit.Result{Allowed: true, Limit: limit, Remaining: 1, ResetAfter: time.Second,
		Charge: ratelimit.Charge{At: ratelimittest.NewClock().Now()}} // the clock never moves here
	assert.Equal(t, []ratelimit.Result{fresh, fresh}, res.Results)
	good, err := server.Do("GET", prefix+"good:tb:1:2")
	require.NoError(t, err)
	bad, err := server.Do("GET", prefix+"bad:tb:1:2")
	require.NoError(t, err)
	assert.Equal(t, good, bad, "the foreign value is a new bucket's TAT now")
}
