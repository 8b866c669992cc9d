package fallback_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// TestDenialCacheAllowAllRedis: a list of three requests in one slot on a real Redis, its
// hot request out of tokens. Redis runs one script a list it decides; the cache answers
// the same list again with no call to Redis at all, and its answer is the one Redis gives a
// Limiter without a cache, on the same buckets, asked just after: the same codes and
// remainings, and durations within what the test's own round trips bracket. A charge of
// another bucket of the list, then a reset of the hot one, through the Limiter, send the
// list back to Redis, which sees them.
func TestDenialCacheAllowAllRedis(t *testing.T) {
	server := redistest.NewServer(t)
	client := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	primary, err := distributed.New(client, distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)
	// No TTL: the list's denial lasts as long as Redis's, however slow the machine.
	l := fallback.New(primary, nil, fallback.WithDenialCacheTTL(-1))
	twin := fallback.New(primary, nil, fallback.WithDenialCacheSize(-1))
	ctx := context.Background()
	// Windows of 10^9 s (about 31.7 years, from 2001-09 to 2033-05): none ends in the test.
	hot := ratelimit.Limit{Rate: 1e-9, Burst: 1, Algorithm: ratelimit.FixedWindow}
	roomy := ratelimit.Limit{Rate: 1, Burst: 1e9, Algorithm: ratelimit.FixedWindow}
	list := []ratelimit.Request{
		{Key: "{t}hot", Limit: hot, Name: "hot"},
		{Key: "{t}route", Limit: roomy, Name: "route"},
		{Key: "{t}tenant", Limit: roomy, Name: "tenant"},
	}
	scripts := func() { // counts from zero again
		t.Helper()
		_, err := server.Do("CONFIG", "RESETSTAT")
		require.NoError(t, err)
	}
	ask := func(l *fallback.Limiter) (ratelimit.MultiResult, bool, time.Time, time.Time) {
		t.Helper()
		sent := time.Now()
		mr, origin, err := l.AllowAllOrigin(ctx, list)
		require.NoError(t, err)
		return mr, origin.Cached, sent, time.Now()
	}

	mr, _, _, _ := ask(l)
	require.True(t, mr.Allowed)
	scripts()
	mr, cached, sent0, back0 := ask(l)
	require.False(t, mr.Allowed)
	require.False(t, cached)
	require.Equal(t, []int{0, 1e9 - 2, 1e9 - 2}, remainings(mr))
	require.Equal(t, int64(1), scriptCalls(t, server), "one script decides the list")

	scripts()
	for range 100 {
		mr, cached, _, _ = ask(l)
		require.False(t, mr.Allowed)
		require.True(t, cached)
	}
	require.Zero(t, scriptCalls(t, server), "no call to Redis")
	got, _, _, asked := ask(l)
	want, cached, _, back1 := ask(twin)
	require.False(t, cached)
	// got is Redis's answer at a Redis time within [sent0, back0], aged by the time since
	// sent0; want is Redis's at a time within [asked, back1]; Redis counts microseconds.
	slack := max(back0.Sub(sent0), back1.Sub(asked)) + time.Microsecond
	requireSameList(t, want, got, slack)

	// A charge of route through the Limiter: Redis decides the list again, route one lower.
	res, err := l.Allow(ctx, "{t}route", roomy)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	scripts()
	mr, cached, _, _ = ask(l)
	require.False(t, cached)
	require.Equal(t, []int{0, 1e9 - 3, 1e9 - 2}, remainings(mr))
	mr, cached, _, _ = ask(l)
	require.True(t, cached)
	require.Equal(t, []int{0, 1e9 - 3, 1e9 - 2}, remainings(mr))
	require.Equal(t, int64(1), scriptCalls(t, server))

	// A reset of hot through the Limiter: Redis admits the list.
	require.NoError(t, ins(l).Reset(ctx, "{t}hot", hot))
	mr, cached, _, _ = ask(l)
	require.False(t, cached)
	require.True(t, mr.Allowed)
	// Charged now: route a third time, tenant a second.
	require.Equal(t, []int{0, 1e9 - 3, 1e9 - 2}, remainings(mr))
}

// requireSameList requires got to be want, but for durations that may differ by slack.
func requireSameList(t *testing.T, want, got ratelimit.MultiResult, slack time.Duration) {
	t.Helper()
	require.Equal(t, want.Allowed, got.Allowed)
	require.Equal(t, want.Binding, got.Binding)
	require.Len(t, got.Results, len(want.Results))
	for i, w := range want.Results {
		g := got.Results[i]
		require.InDelta(t, w.RetryAfter, g.RetryAfter, float64(slack), "result %d", i)
		require.InDelta(t, w.ResetAfter, g.ResetAfter, float64(slack), "result %d", i)
		w.RetryAfter, w.ResetAfter, g.RetryAfter, g.ResetAfter = 0, 0, 0, 0
		require.Equal(t, w, g, "result %d", i)
	}
}
