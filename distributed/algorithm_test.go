package distributed_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// A limit's algorithm names its bucket's key: on a limiter whose default is the fixed window,
// PerMinute(2) left to the default and naming FixedWindow are one key, tag "fw"; naming the
// sliding log, another, tag "swl".
func TestLimitAlgorithmKeys(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	prefix := uniquePrefix()
	l := newLimiter(t, client, ratelimittest.NewClock(), distributed.WithPrefix(prefix),
		distributed.WithAlgorithm(ratelimit.FixedWindow))
	ctx := context.Background()
	implicit := ratelimit.PerMinute(2)
	explicit := ratelimit.Limit{Rate: implicit.Rate, Burst: 2, Algorithm: ratelimit.FixedWindow}
	log := ratelimit.Limit{Rate: implicit.Rate, Burst: 2, Algorithm: ratelimit.SlidingWindowLog}

	res, err := l.AllowN(ctx, "k", implicit, 2)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	res, err = l.Allow(ctx, "k", explicit)
	require.NoError(t, err)
	assert.False(t, res.Allowed, "the default named is the default: one bucket, drained")
	res, err = l.AllowN(ctx, "k", log, 2)
	require.NoError(t, err)
	assert.True(t, res.Allowed, "another algorithm is another bucket, full")

	keys, err := client.Keys(ctx, prefix+"*").Result()
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{prefix + "k:fw:0.03333333333333333:2", prefix + "k:swl:0.03333333333333333:2"}, keys)
}

// AllowAll decides buckets of three algorithms in one script, all or nothing: a drained
// sliding log denies the call, and the token bucket and the fixed window beside it keep
// every token; once the log has room, all three are charged in one round trip.
func TestAllowAllMixedAlgorithmsOneScript(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock()
	l := newLimiter(t, newClient(t, server.Addr()), clock)
	ctx := context.Background()
	tb := ratelimit.Limit{Rate: 1, Burst: 3} // the limiter's default
	fw := ratelimit.Limit{Rate: 1, Burst: 3, Algorithm: ratelimit.FixedWindow}
	swl := ratelimit.Limit{Rate: 2, Burst: 2, Algorithm: ratelimit.SlidingWindowLog}
	reqs := []ratelimit.Request{{Key: "u", Limit: tb, Name: "tb"}, {Key: "u", Limit: fw, Name: "fw"}, {Key: "u", Limit: swl, Name: "swl"}}

	res, err := l.AllowN(ctx, "u", swl, 2)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	mr, err := l.AllowAll(ctx, reqs)
	require.NoError(t, err)
	assert.False(t, mr.Allowed)
	assert.Equal(t, 2, mr.Binding, "the sliding log denies")
	// peekRemaining is what one more token would leave.
	assert.Equal(t, 2, peekRemaining(t, l, "u", tb), "nothing taken")
	assert.Equal(t, 2, peekRemaining(t, l, "u", fw), "nothing taken")

	clock.Advance(time.Second) // the log's entries leave its window of 1 s
	before := scriptCalls(t, server)
	mr, err = l.AllowAll(ctx, reqs)
	require.NoError(t, err)
	require.True(t, mr.Allowed)
	assert.Equal(t, int64(1), scriptCalls(t, server)-before, "one EVALSHA")
	assert.Equal(t, 1, peekRemaining(t, l, "u", tb))
	assert.Equal(t, 1, peekRemaining(t, l, "u", fw))
	assert.Equal(t, 0, peekRemaining(t, l, "u", swl))

	// Refund and Reset reach each algorithm's bucket.
	_, err = l.Refund(ctx, "u", swl, 1, mr.Results[2].Charge)
	require.NoError(t, err)
	assert.Equal(t, 1, peekRemaining(t, l, "u", swl), "the log's entry dropped")
	require.NoError(t, l.Reset(ctx, "u", fw))
	assert.Equal(t, 2, peekRemaining(t, l, "u", fw))
	assert.Equal(t, 1, peekRemaining(t, l, "u", tb), "the token bucket untouched")
}

// On a token-bucket limiter, Wait under a limit naming the leaky bucket takes a place in its
// queue on Redis: three Waits on a queue of two drained ten a second leave 100 ms apart.
// Under the limiter's default it stays unsupported.
func TestWaitPerLimitLeakyBucket(t *testing.T) {
	server := redistest.NewServer(t)
	prefix := uniquePrefix()
	synctest.Test(t, func(t *testing.T) {
		client := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
		defer client.Close()
		l, err := distributed.New(client, distributed.WithPrefix(prefix), distributed.WithClock(time.Now),
			distributed.WithTimeout(-1))
		require.NoError(t, err)
		ctx := context.Background()
		limit := ratelimit.Limit{Rate: 10, Burst: 2, Algorithm: ratelimit.LeakyBucket}
		start := time.Now()
		for i := range 3 {
			require.NoError(t, l.Wait(ctx, "q", limit))
			assert.Equal(t, time.Duration(i)*100*time.Millisecond, time.Since(start))
		}
		require.ErrorIs(t, l.Wait(ctx, "q", ratelimit.Limit{Rate: 10, Burst: 2, Algorithm: ratelimit.FixedWindow}), ratelimit.ErrNotSupported)
	})
}

// ValidateLimit checks a limit under its own algorithm: the sliding log's MaxLogBurst on a
// token-bucket limiter, a warm-up only with the token bucket whatever the default.
func TestValidateLimitAlgorithm(t *testing.T) {
	server := redistest.NewServer(t)
	tb := newLimiter(t, newClient(t, server.Addr()), ratelimittest.NewClock())
	fw := newLimiter(t, newClient(t, server.Addr()), ratelimittest.NewClock(), distributed.WithAlgorithm(ratelimit.FixedWindow))
	require.ErrorIs(t, tb.ValidateLimit(ratelimit.Limit{Rate: 1, Burst: args.MaxLogBurst + 1, Algorithm: ratelimit.SlidingWindowLog}),
		ratelimit.ErrInvalidArgument)
	require.NoError(t, tb.ValidateLimit(ratelimit.Limit{Rate: 1, Burst: args.MaxLogBurst + 1}))
	require.NoError(t, fw.ValidateLimit(ratelimit.Limit{Rate: 1, Burst: 1, Warmup: time.Second, Algorithm: ratelimit.TokenBucket}))
	require.ErrorIs(t, fw.ValidateLimit(ratelimit.Limit{Rate: 1, Burst: 1, Warmup: time.Second}), ratelimit.ErrNotSupported)
	require.ErrorIs(t, tb.ValidateLimit(ratelimit.Limit{Rate: 1, Burst: 1, Algorithm: 99}), ratelimit.ErrInvalidArgument)
}
