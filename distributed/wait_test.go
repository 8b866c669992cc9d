package distributed_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
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
			distributed.WithAlgorithm(ratelimit.LeakyBucket), distributed.WithTimeout(0))
		require.NoError(t, err)
		f(t, l)
	})
}

// tenPerSecond is a queue of 5 places drained every 100 ms.
var tenPerSecond = ratelimit.Limit{Rate: 10, Burst: 5}

// TestWaitSpacing: seven callers Wait at once on a queue of five. Five take a place at once
// and leave 100 ms apart; two find it full, come back when a place frees up, and leave in
// their turn.
func TestWaitSpacing(t *testing.T) {
	inBubble(t, redistest.NewServer(t), func(t *testing.T, l *distributed.Limiter) {
		start := time.Now()
		var mu sync.Mutex
		var left []time.Duration
		var wg sync.WaitGroup
		for range 7 {
			wg.Go(func() {
				assert.NoError(t, l.Wait(context.Background(), "k", tenPerSecond))
				mu.Lock()
				left = append(left, time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		slices.Sort(left)
		ms := time.Millisecond
		assert.Equal(t, []time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms, 600 * ms}, left)
	})
}

// TestWaitDeadline: the script refuses a place whose turn comes after the deadline, and takes
// nothing; a turn exactly at the deadline is taken and served.
func TestWaitDeadline(t *testing.T) {
	inBubble(t, redistest.NewServer(t), func(t *testing.T, l *distributed.Limiter) {
		ctx := context.Background()
		res, err := l.AllowN(ctx, "k", tenPerSecond, 3) // the queue ends at 300 ms
		require.NoError(t, err)
		require.True(t, res.Allowed)
		start := time.Now()
		short, cancel := context.WithTimeout(ctx, 299*time.Millisecond)
		defer cancel()
		err = l.Wait(short, "k", tenPerSecond)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualError(t, err, `ratelimit: the queue would hold the request 300ms, past the context deadline: context deadline exceeded`)
		assert.Zero(t, time.Since(start))

		exact, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		require.NoError(t, l.Wait(exact, "k", tenPerSecond))
		assert.Equal(t, 300*time.Millisecond, time.Since(start))
	})
}

// TestWaitFullQueue: a full queue that drains after the deadline fails at once; with time
// enough, Wait sleeps until a place frees up, takes it, and sleeps until its turn.
func TestWaitFullQueue(t *testing.T) {
	inBubble(t, redistest.NewServer(t), func(t *testing.T, l *distributed.Limiter) {
		ctx := context.Background()
		res, err := l.AllowN(ctx, "k", tenPerSecond, 5)
		require.NoError(t, err)
		require.True(t, res.Allowed)
		start := time.Now()
		short, cancel := context.WithTimeout(ctx, 450*time.Millisecond)
		defer cancel()
		err = l.Wait(short, "k", tenPerSecond)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Zero(t, time.Since(start))

		require.NoError(t, l.Wait(ctx, "k", tenPerSecond))
		assert.Equal(t, 500*time.Millisecond, time.Since(start))
	})
}

// TestWaitCanceledKeepsPlace: a Wait canceled while it sleeps until its turn returns at once;
// its place stays taken.
func TestWaitCanceledKeepsPlace(t *testing.T) {
	inBubble(t, redistest.NewServer(t), func(t *testing.T, l *distributed.Limiter) {
		ctx := context.Background()
		_, err := l.Allow(ctx, "k", tenPerSecond) // turn at 0
		require.NoError(t, err)
		canceled, cancel := context.WithCancel(ctx)
		time.AfterFunc(30*time.Millisecond, cancel)
		start := time.Now()
		require.ErrorIs(t, l.Wait(canceled, "k", tenPerSecond), context.Canceled) // turn at 100 ms
		assert.Equal(t, 30*time.Millisecond, time.Since(start))
		res, err := l.Allow(ctx, "k", tenPerSecond)
		require.NoError(t, err)
		assert.Equal(t, 170*time.Millisecond, res.Delay, "the next turn is at 200 ms")
	})
}

// TestWaitOtherAlgorithms: Wait stays unsupported for the policing algorithms.
func TestWaitOtherAlgorithms(t *testing.T) {
	for _, alg := range []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.SlidingWindowLog, ratelimit.Algorithm(99)} {
		l, err := distributed.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), distributed.WithAlgorithm(alg))
		require.NoError(t, err)
		require.ErrorIs(t, l.Wait(context.Background(), "k", ratelimit.PerSecond(1)), ratelimit.ErrNotSupported, "%v", alg)
	}
}
