package distributed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestWarmupKeyLayout pins what a bucket with a warm-up looks like in Redis: its key, tagged
// "tbw" and ending in the warm-up in µs, and its value, "s:T": when the warm-up began, in µs
// since 2020, and the TAT on the warm clock.
func TestWarmupKeyLayout(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock() // 2026-01-01, 2192 days after 2020-01-01
	l, err := distributed.New(newClient(t, server.Addr()), distributed.WithClock(clock.Now), distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)
	limit := ratelimit.Limit{Rate: 10, Burst: 20, Warmup: 30 * time.Second}
	ctx := context.Background()

	res, err := l.Allow(ctx, "user:42", limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	const key = "ratelimit:user:42:tbw:10:20:30000000"
	// s = 2192 days × 86,400 s in µs. Cold, the bucket holds τ(0) = 20/3: T = 20 − 20/3 + 1.
	got, err := server.Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, "189388800000000:14.333333333333332", got)
	// The plain bucket of the same key and rate and burst is another key.
	_, err = l.Allow(ctx, "user:42", ratelimit.Limit{Rate: 10, Burst: 20})
	require.NoError(t, err)
	n, err := server.Do("EXISTS", "ratelimit:user:42:tb:10:20")
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)

	// A denial writes nothing, unless it finds the bucket cold: then the warm-up it begins
	// is written, with an expiry, even though the request for the whole burst is denied.
	res, err = l.AllowN(ctx, "user:43", limit, 20)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	got, err = server.Do("GET", "ratelimit:user:43:tbw:10:20:30000000")
	require.NoError(t, err)
	assert.Equal(t, "189388800000000:0", got)
	for range 5 { // the rest of τ(0) = 6.67: 5 more, then a denial
		res, err = l.Allow(ctx, "user:42", limit)
		require.NoError(t, err)
		require.True(t, res.Allowed)
	}
	res, err = l.Allow(ctx, "user:42", limit)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	got, err = server.Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, "189388800000000:19.333333333333332", got)
}

// TestWarmupRedisClock runs without a test clock: the script reads Redis TIME, and the key
// expires once the bucket is cold, when W(d) reaches max(T, W(P)) + Burst.
func TestWarmupRedisClock(t *testing.T) {
	server := redistest.NewServer(t)
	prefix := uniquePrefix()
	l, err := distributed.New(newClient(t, server.Addr()), distributed.WithPrefix(prefix), distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)
	ctx := context.Background()
	// W(P) = 10 · 2/3 · 30 = 200 tokens; T = 14.33 after one request: cold when W = 220, 2 s
	// of 10 a second after the warm-up's 30 s.
	limit := ratelimit.Limit{Rate: 10, Burst: 20, Warmup: 30 * time.Second}
	res, err := l.Allow(ctx, "k", limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, 5, res.Remaining) // ⌊20/3⌋ − 1
	ttl, err := server.Do("PTTL", prefix+"k:tbw:10:20:30000000")
	require.NoError(t, err)
	assert.InDelta(t, 32_001, ttl, 1000)
}
