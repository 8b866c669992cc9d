package distributed_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// windowAlgorithms are the algorithms of fixed, epoch-aligned windows.
var windowAlgorithms = []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingWindowCounter}

// TestWindowKeyLayout pins what a window bucket looks like in Redis: its name, its value,
// and its expiry at the end of the windows it weighs in.
func TestWindowKeyLayout(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	ctx := context.Background()
	limit := ratelimit.PerMinute(100) // W = 60 s
	// 2026-01-01T00:00:00Z is Unix 1,767,225,600 s: window 29,453,760 of one minute.
	cases := []struct {
		alg   ratelimit.Algorithm
		key   string
		value string
	}{
		{ratelimit.FixedWindow, "ratelimit:user:42:fw:1.6666666666666667:100", "29453760:2"},
		{ratelimit.SlidingWindowCounter, "ratelimit:user:42:swc:1.6666666666666667:100", "29453760:2:0"},
	}
	for _, c := range cases {
		t.Run(c.alg.String(), func(t *testing.T) {
			clock := ratelimittest.NewClock()
			l, err := distributed.New(client, distributed.WithClock(clock.Now), distributed.WithAlgorithm(c.alg),
				distributed.WithTimeout(10*time.Second)) // a loaded 2-core machine under -race
			require.NoError(t, err)
			_, err = l.Allow(ctx, "user:42", limit)
			require.NoError(t, err)
			res, err := l.Allow(ctx, "user:42", limit)
			require.NoError(t, err)
			require.True(t, res.Allowed)
			require.Equal(t, 98, res.Remaining)
			got, err := server.Do("GET", c.key)
			require.NoError(t, err)
			assert.Equal(t, c.value, got)

			// One window on, the counter carries the count over as the previous window's.
			if c.alg == ratelimit.SlidingWindowCounter {
				clock.Advance(time.Minute)
				_, err = l.Allow(ctx, "user:42", limit)
				require.NoError(t, err)
				got, err = server.Do("GET", c.key)
				require.NoError(t, err)
				assert.Equal(t, "29453761:1:2", got)
			}
		})
	}
}

// TestWindowsOnRedisClock runs without a test clock: the scripts read Redis TIME, and a key
// expires with the last window it weighs in.
func TestWindowsOnRedisClock(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	ctx := context.Background()
	limit := ratelimit.PerHour(2) // W = 1 h
	for _, alg := range windowAlgorithms {
		t.Run(alg.String(), func(t *testing.T) {
			prefix := uniquePrefix()
			l, err := distributed.New(client, distributed.WithPrefix(prefix), distributed.WithAlgorithm(alg),
				distributed.WithTimeout(10*time.Second))
			require.NoError(t, err)
			var last ratelimit.Result
			for range 2 {
				last, err = l.Allow(ctx, "k", limit)
				require.NoError(t, err)
				require.True(t, last.Allowed)
			}
			res, err := l.Allow(ctx, "k", limit)
			require.NoError(t, err)
			require.False(t, res.Allowed)
			require.Positive(t, res.RetryAfter)

			// The hour's end, then (counter) one more: where the key's expiry lies, to the ms.
			keys, err := server.Do("KEYS", prefix+"*")
			require.NoError(t, err)
			require.Len(t, keys, 1)
			key := keys.([]any)[0].(string)
			require.True(t, strings.HasSuffix(key, ":"+map[ratelimit.Algorithm]string{
				ratelimit.FixedWindow: "fw", ratelimit.SlidingWindowCounter: "swc"}[alg]+":0.0005555555555555556:2"), key)
			ttl, err := server.Do("PTTL", key)
			require.NoError(t, err)
			end := last.ResetAfter
			assert.InDelta(t, end.Milliseconds(), ttl, 1000, "PTTL against ResetAfter %v", end)
			if alg == ratelimit.FixedWindow {
				assert.LessOrEqual(t, end, time.Hour)
				// Denied a moment later, it waits for the same end.
				assert.InDelta(t, end, res.RetryAfter, float64(time.Second))
			} else {
				assert.Greater(t, end, time.Hour)
				assert.LessOrEqual(t, end, 2*time.Hour)
			}
		})
	}
}

// TestWindowInvalidLimit: a window longer than 2⁵³ µs is refused before any round trip
// (the client points nowhere), with the local backend's error.
func TestWindowInvalidLimit(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = client.Close() })
	for _, alg := range windowAlgorithms {
		l, err := distributed.New(client, distributed.WithAlgorithm(alg))
		require.NoError(t, err)
		_, err = l.Allow(context.Background(), "k", ratelimit.Limit{Rate: 1e-6, Burst: 9008})
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "%v", alg)
		require.ErrorContains(t, err, "2^53 µs", "%v", alg)
	}
}
