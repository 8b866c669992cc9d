package distributed_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestPriorityFlood: 64 goroutines on one Redis bucket of 100 tokens, for every algorithm,
// with the clock standing still: 16 Normal goroutines and 32 Sheddable ones make 8 requests
// each, and 16 Critical goroutines one each, sent once the flood has made 150 of its 384.
// Normal requests may take the bucket down to 20 tokens (reserve 0.2), Sheddable ones down
// to 50, Critical ones to empty: so every Critical request passes, since at most 16 of the
// 20 reserved tokens are theirs to take, and what Redis holds afterwards is exactly what the
// goroutines were told they took. A Critical drain then takes the rest: 100 in all.
func TestPriorityFlood(t *testing.T) {
	server := redistest.NewServer(t)
	client := newClient(t, server.Addr())
	limit := ratelimit.Limit{Rate: 1, Burst: 100}
	for _, alg := range ratelimittest.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			clock := ratelimittest.NewClock()
			prefix := uniquePrefix()
			l := newLimiter(t, client, clock, distributed.WithAlgorithm(alg), distributed.WithPrefix(prefix),
				distributed.WithReserves(priority.Reserves{Normal: 0.2}))

			const goroutines, criticals, attempts = 64, 16, 8
			var admitted [3]atomic.Int64
			var sent atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			ask := func(ctx context.Context, p priority.Level) bool {
				res, err := l.Allow(ctx, "flood", limit)
				if err != nil {
					errs <- err
					return false
				}
				if res.Allowed {
					admitted[p].Add(1)
				}
				return true
			}
			for i := range goroutines {
				switch {
				case i%4 == 0:
					wg.Go(func() {
						for sent.Load() < 150 {
							runtime.Gosched() // not a sleep: it waits for the flood, not for time
						}
						ask(priority.With(context.Background(), priority.Critical), priority.Critical)
					})
				default:
					p := priority.Sheddable
					if i%2 == 0 {
						p = priority.Normal
					}
					wg.Go(func() {
						ctx := priority.With(context.Background(), p)
						for range attempts {
							sent.Add(1)
							if !ask(ctx, p) {
								return
							}
						}
					})
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			c, n, s := admitted[priority.Critical].Load(), admitted[priority.Normal].Load(), admitted[priority.Sheddable].Load()
			require.Equal(t, int64(criticals), c, "a Critical request was denied while the reserve held")
			require.LessOrEqual(t, s, int64(50))
			taken := c + n + s
			require.True(t, 80 <= taken && taken <= 96, "taken %d: critical %d, normal %d, sheddable %d", taken, c, n, s)

			// What Redis holds is what the goroutines were told.
			key := prefix + "flood:" + map[ratelimit.Algorithm]string{
				ratelimit.TokenBucket: "tb", ratelimit.FixedWindow: "fw", ratelimit.SlidingWindowLog: "swl",
				ratelimit.SlidingWindowCounter: "swc", ratelimit.LeakyBucket: "lb",
			}[alg] + ":1:100"
			require.Equal(t, taken, storedCount(t, server, alg, key, clock))

			// The rest goes to Critical requests, and not one token more.
			drained := int64(0)
			for {
				res, err := l.Allow(context.Background(), "flood", limit)
				require.NoError(t, err)
				if !res.Allowed {
					break
				}
				drained++
			}
			require.Equal(t, int64(limit.Burst), taken+drained)
			require.Equal(t, int64(limit.Burst), storedCount(t, server, alg, key, clock))
		})
	}
}

// storedCount reads how many tokens the bucket at key has given out, from its value in
// Redis: the TAT less now, in tokens at 1 a second, for the token and leaky buckets (the
// clock stands still); the window's count for the window algorithms; the log's entries.
func storedCount(t *testing.T, server *redistest.Server, alg ratelimit.Algorithm, key string, clock *ratelimittest.Clock) int64 {
	t.Helper()
	if alg == ratelimit.SlidingWindowLog {
		n, err := server.Do("ZCARD", key)
		require.NoError(t, err)
		return n.(int64)
	}
	v, err := server.Do("GET", key)
	require.NoError(t, err)
	s, ok := v.(string)
	require.True(t, ok, "%T %v", v, v)
	switch alg {
	case ratelimit.TokenBucket, ratelimit.LeakyBucket:
		tat, err := strconv.ParseInt(s, 10, 64)
		require.NoError(t, err, "TAT %q", s)
		now := clock.Now().Sub(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)).Microseconds() / 1e6 // tokens
		return tat - now
	}
	// "window:count" or "window:cur:prev": the count of this window, with nothing before it.
	parts := strings.Split(s, ":")
	require.GreaterOrEqual(t, len(parts), 2, "%q", s)
	if len(parts) == 3 {
		require.Equal(t, "0", parts[2], "%q", s)
	}
	n, err := strconv.ParseInt(parts[1], 10, 64)
	require.NoError(t, err, "%q", s)
	return n
}

// TestPriorityWait: Wait on the leaky bucket keeps the reserve of its context's priority, on
// synctest's clock. Rate 1/s, Burst 10: 5 places queued at t0 leave a Sheddable request (5
// kept back) no place until t0 + 1 s, and its turn then comes 4 s later.
func TestPriorityWait(t *testing.T) {
	server := redistest.NewServer(t)
	inBubble(t, server, func(t *testing.T, l *distributed.Limiter) {
		limit := ratelimit.Limit{Rate: 1, Burst: 10}
		bg := context.Background()
		shed := priority.With(bg, priority.Sheddable)
		t0 := time.Now()
		res, err := l.AllowN(bg, "q", limit, 5)
		require.NoError(t, err)
		require.True(t, res.Allowed)

		// The queue is full for Sheddable and drains in 5 s, after a deadline 3 s away: Wait
		// fails at once, taking nothing.
		short, cancel := context.WithTimeout(shed, 3*time.Second)
		err = l.Wait(short, "q", limit)
		cancel()
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Equal(t, t0, time.Now(), "failed at once")
		peeked, err := l.Peek(bg, "q", limit, 1)
		require.NoError(t, err)
		require.Equal(t, 4, peeked.Remaining, "the failed Wait took nothing")

		// With 10 s: a place frees up for Sheddable at 1 s, then its turn comes at 5 s.
		long, cancel := context.WithTimeout(shed, 10*time.Second)
		require.NoError(t, l.Wait(long, "q", limit))
		cancel()
		require.Equal(t, 5*time.Second, time.Since(t0))

		// Critical finds one place queued ahead of it, the Sheddable request's last: 1 s.
		require.NoError(t, l.Wait(bg, "q", limit))
		require.Equal(t, 6*time.Second, time.Since(t0))
	})
}

// TestWithReservesInvalid: New refuses reserves that could not be enforced, before any
// request, with an error wrapping ratelimit.ErrInvalidArgument.
func TestWithReservesInvalid(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never contacted
	t.Cleanup(func() { _ = client.Close() })
	for _, c := range []struct {
		r    priority.Reserves
		want string
	}{
		{priority.Reserves{Normal: 1}, "distributed: New: WithReserves: ratelimit: invalid reserves: reserve Normal = 1 is not a fraction below 1"},
		{priority.Reserves{Sheddable: 0.05}, "distributed: New: WithReserves: ratelimit: invalid reserves: reserve Sheddable = 0.05 is less than reserve Normal = 0.1: a lower priority must keep back at least as much"},
	} {
		l, err := distributed.New(client, distributed.WithReserves(c.r))
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
		require.EqualError(t, err, c.want)
		require.Nil(t, l)
	}
	for _, r := range []priority.Reserves{{}, {Normal: -1, Sheddable: -1}, {Normal: 0.3, Sheddable: 0.9}} {
		_, err := distributed.New(client, distributed.WithReserves(r))
		require.NoError(t, err, "%+v", r)
	}
}
