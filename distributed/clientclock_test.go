package distributed_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestClientClockSkew: with WithClientClock, a host whose clock runs d ahead sees a bucket
// refilled d early and admits Rate·d tokens more, no more; one whose clock is behind waits
// longer. Here 10/s with a burst of 10 and d = 300 ms: 3 tokens.
func TestClientClockSkew(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	prefix := uniquePrefix()
	at := func(clock *ratelimittest.Clock, skew time.Duration) *distributed.Limiter {
		l, err := distributed.New(client, distributed.WithPrefix(prefix), distributed.WithTimeout(10*time.Second),
			distributed.WithClientClockOn(func() time.Time { return clock.Now().Add(skew) }, time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	clock := ratelimittest.NewClock()
	onTime, ahead, behind := at(clock, 0), at(clock, 300*time.Millisecond), at(clock, -300*time.Millisecond)
	ctx, limit := context.Background(), ratelimit.PerSecond(10)
	ms := time.Millisecond

	res, err := onTime.AllowN(ctx, "k", limit, 10)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	res, err = onTime.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Result{Limit: limit, RetryAfter: 100 * ms, ResetAfter: time.Second}, res)

	// 300 ms ahead: the TAT, 1 s after the drain, is 700 ms (7 tokens) away: 3 are free.
	res, err = ahead.AllowN(ctx, "k", limit, 3)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Result{Allowed: true, Limit: limit, ResetAfter: time.Second,
		Charge: ratelimit.Charge{At: clock.Now().Add(300 * ms)}}, res)
	res, err = ahead.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Result{Limit: limit, RetryAfter: 100 * ms, ResetAfter: time.Second}, res)

	// 300 ms behind: the TAT, now 1.3 s after the drain, is 1.6 s away, 0.7 s past the most a
	// token can wait.
	res, err = behind.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Result{Limit: limit, RetryAfter: 700 * ms, ResetAfter: 1600 * ms}, res)
}

// TestClientClockKeyOutlivesBySkew: a key expires its skew bound after its state would, on
// Redis's clock: a host whose clock is behind by up to the bound still finds it.
func TestClientClockKeyOutlivesBySkew(t *testing.T) {
	server := redistest.NewServer(t)
	prefix := uniquePrefix()
	l, err := distributed.New(newClient(t, server.Addr()), distributed.WithPrefix(prefix),
		distributed.WithTimeout(10*time.Second), distributed.WithClientClock(2*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	before := redisMillis(t, server)
	res, err := l.Allow(context.Background(), "k", ratelimit.PerSecond(10))
	require.NoError(t, err)
	after := redisMillis(t, server)
	require.True(t, res.Allowed)
	require.Equal(t, 100*time.Millisecond, res.ResetAfter)
	// Set between before and after, for the 100 ms the token takes to come back and 2 s.
	v, err := server.Do("PEXPIRETIME", prefix+"k:tb:10:10")
	require.NoError(t, err)
	expires := v.(int64)
	assert.GreaterOrEqual(t, expires, before+2100)
	assert.LessOrEqual(t, expires, after+2100)
}

// redisMillis reads Redis TIME in Unix milliseconds.
func redisMillis(t *testing.T, server *redistest.Server) int64 {
	t.Helper()
	v, err := server.Do("TIME")
	require.NoError(t, err)
	parts := v.([]any)
	s, err := strconv.ParseInt(parts[0].(string), 10, 64)
	require.NoError(t, err)
	us, err := strconv.ParseInt(parts[1].(string), 10, 64)
	require.NoError(t, err)
	return s*1000 + us/1000
}

// TestClientClockWithoutTIME: on a host that refuses TIME in scripts, the limiter on the
// Redis clock cannot decide; with WithClientClock every call works, single and several
// keys, every algorithm, and Check loads the scripts it runs. WithClientClock(-1) turns the
// option off again.
func TestClientClockWithoutTIME(t *testing.T) {
	server := redistest.NewServerArgs(t, "--rename-command", "TIME", "")
	client := newClient(t, server.Addr())
	ctx := context.Background()
	limit := ratelimit.PerSecond(10)

	for name, opts := range map[string][]distributed.Option{
		"default": nil,
		"off":     {distributed.WithClientClock(0), distributed.WithClientClock(-1)},
	} {
		l, err := distributed.New(client, append(opts, distributed.WithPrefix(uniquePrefix()))...)
		require.NoError(t, err)
		_, err = l.Allow(ctx, "k", limit)
		require.Error(t, err, name)
		// Redis says "Unknown Redis command", Valkey "Unknown command".
		assert.Regexp(t, `Unknown (Redis )?command called from script`, err.Error(), name)
	}

	l, err := distributed.New(client, distributed.WithPrefix(uniquePrefix()), distributed.WithTimeout(10*time.Second),
		distributed.WithClientClock(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	require.NoError(t, l.Check(ctx))
	for _, a := range []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.FixedWindow, ratelimit.SlidingWindowLog,
		ratelimit.SlidingWindowCounter, ratelimit.LeakyBucket} {
		lim := limit
		lim.Algorithm = a
		res, err := l.AllowN(ctx, "k", lim, 4)
		require.NoError(t, err, a)
		assert.True(t, res.Allowed, a)
		assert.Equal(t, 6, res.Remaining, a)
	}
	warm := limit
	warm.Warmup = time.Minute
	res, err := l.Allow(ctx, "w", warm)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
	day, err := ratelimit.ParseLimit("5/day@UTC")
	require.NoError(t, err)
	res, err = l.AllowN(ctx, "q", day, 2)
	require.NoError(t, err)
	assert.Equal(t, 3, res.Remaining)

	mr, err := l.AllowAll(ctx, []ratelimit.Request{{Key: "m", Limit: limit, N: 3}, {Key: "m", Limit: day, N: 1}})
	require.NoError(t, err)
	require.True(t, mr.Allowed)
	assert.Equal(t, []int{7, 4}, []int{mr.Results[0].Remaining, mr.Results[1].Remaining})
	res, err = l.Refund(ctx, "m", limit, 3, mr.Results[0].Charge)
	require.NoError(t, err)
	assert.Equal(t, 9, res.Remaining, "the three given back: a full bucket, less the token a peek takes")
	res, err = l.Peek(ctx, "m", limit, 1)
	require.NoError(t, err)
	assert.Equal(t, 9, res.Remaining)
}
