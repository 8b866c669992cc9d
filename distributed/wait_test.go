package distributed_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// The tests of Wait with ratelimit.LeakyBucket run on synctest's clock, which the script
// reads in place of Redis TIME: time moves only while every goroutine of the test waits on
// a timer, never while one waits on Redis.

// inBubble runs f in a synctest bubble with a leaky bucket limiter on server, whose client
// lives and dies in the bubble.
func inBubble(t *testing.T, server *redistest.Server, f func(t *testing.T, l *distributed.Limiter)) {
	prefix := uniquePrefix()
	synctest.Test(t, func(t *testing.T) {
		client := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
		defer client.Close()
		l, err := distributed.New(client, distributed.WithPrefix(prefix), distributed.WithClock(time.Now),
			distributed.WithAlgorithm(ratelimit.LeakyBucket), distributed.WithTimeout(-1))
		require.NoError(t, err)
		f(t, l)
	})
}

// TestWaitOtherAlgorithms: Wait stays unsupported for the windows, which keep no timeline
// to book a slot on (the token bucket waits with Reserve: reserve_test.go).
func TestWaitOtherAlgorithms(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingWindowLog, ratelimit.CalendarQuota} {
		l, err := distributed.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), distributed.WithAlgorithm(alg))
		require.NoError(t, err)
		require.ErrorIs(t, l.Wait(context.Background(), "k", ratelimit.PerSecond(1)), ratelimit.ErrNotSupported, "%v", alg)
	}
}

// TestWaitClose: Close ends a Wait that holds for its turn, at once, with
// ratelimit.ErrClosed, as the local backend's does.
func TestWaitClose(t *testing.T) {
	server := redistest.NewServer(t)
	inBubble(t, server, func(t *testing.T, l *distributed.Limiter) {
		ctx := context.Background()
		limit := ratelimit.Limit{Rate: 1, Burst: 2}
		res, err := l.Allow(ctx, "k", limit) // the queue's first place: no delay
		require.NoError(t, err)
		require.True(t, res.Allowed)

		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- l.Wait(ctx, "k", limit) }() // the second place: its turn in 1 s
		synctest.Wait()                                 // Wait holds for its turn
		select {
		case err := <-done:
			t.Fatalf("Wait returned %v before Close", err)
		default:
		}

		require.NoError(t, l.Close())
		synctest.Wait()
		select {
		case err := <-done:
			require.ErrorIs(t, err, ratelimit.ErrClosed)
			require.Zero(t, time.Since(start), "Wait held on after Close")
		default:
			t.Fatal("Wait still holds after Close")
		}
	})
}
