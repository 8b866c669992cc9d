package distributed_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/conformance"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
)

// windowAlgorithms are the algorithms of fixed, epoch-aligned windows.
var windowAlgorithms = []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingWindowCounter}

// TestWindowsAgreeWithLocal plays the same random timelines on the local backend and on the
// Redis script and requires identical Results, far from the round numbers of the
// conformance suite: windows of days to centuries, bursts up to 10⁹, costs up to the burst.
// There the counter's float arithmetic is inexact, its first guess at RetryAfter can be a few
// microseconds off, and the search that corrects it must take the same steps on both
// backends. The clock stays below 2⁵³ µs since 1970 (the year 2255), where Lua's numbers are
// exact integers.
func TestWindowsAgreeWithLocal(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	limits := []ratelimit.Limit{
		{Rate: 1e-3, Burst: 1000},                       // W = 10⁶ s, 11.6 days
		{Rate: 12345.0 / (1 << 40) * 1e6, Burst: 12345}, // W = 2⁴⁰ µs, 12.7 days
		{Rate: 1e9 / 3e15 * 1e6, Burst: 1e9},            // W = 3·10¹⁵ µs, 95 years
		{Rate: 7e-9, Burst: 7},                          // W = 10¹⁵ µs, 31.7 years
		{Rate: 1e-6, Burst: 9007},                       // W = 9.007·10¹⁵ µs, 285 years
		{Rate: 3, Burst: 1},                             // W = 333,333 µs
	}
	for _, alg := range windowAlgorithms {
		for i, limit := range limits {
			w, err := args.Window(limit)
			require.NoError(t, err)
			t.Run(alg.String()+"/"+limit.String(), func(t *testing.T) {
				clock := conformance.NewClock()
				loc := local.New(local.WithClock(clock.Now), local.WithAlgorithm(alg))
				t.Cleanup(func() { loc.Close() })
				red := newLimiter(t, client, clock, distributed.WithAlgorithm(alg))
				rng := rand.New(rand.NewPCG(uint64(i), 7))
				budget := int64(5e15) // µs the clock may still move
				ctx := context.Background()
				for j := range 400 {
					var gap int64
					switch rng.IntN(4) {
					case 1:
						gap = rng.Int64N(w/8 + 1)
					case 2:
						gap = rng.Int64N(w + 1)
					case 3:
						gap = rng.Int64N(2*w + 1)
					}
					gap = min(gap, budget)
					budget -= gap
					clock.Advance(time.Duration(gap) * time.Microsecond)
					n := 1 + rng.IntN(limit.Burst)
					if rng.IntN(2) == 0 {
						n = 1 + rng.IntN(min(limit.Burst, 3))
					}
					want, err := loc.AllowN(ctx, "k", limit, n)
					require.NoError(t, err)
					got, err := red.AllowN(ctx, "k", limit, n)
					require.NoError(t, err)
					require.Equal(t, want, got, "request %d: n=%d at %v", j, n, clock.Now())
				}
			})
		}
	}
}

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
			clock := conformance.NewClock()
			l, err := distributed.New(client, distributed.WithClock(clock.Now), distributed.WithAlgorithm(c.alg))
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
			l, err := distributed.New(client, distributed.WithPrefix(prefix), distributed.WithAlgorithm(alg))
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
		require.ErrorIs(t, err, ratelimit.ErrInvalidLimit, "%v", alg)
		require.ErrorContains(t, err, "2^53 µs", "%v", alg)
	}
}
