package local

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// The tests of Wait with ratelimit.LeakyBucket, on synctest's clock: a place in the queue is
// reserved at once, then the caller sleeps until its turn.

// tenPerSecond is a queue of 5 places drained every 100 ms.
var tenPerSecond = ratelimit.Limit{Rate: 10, Burst: 5}

func newQueue(t *testing.T) *Limiter {
	l := New(WithAlgorithm(ratelimit.LeakyBucket))
	t.Cleanup(func() { l.Close() })
	return l
}

// TestQueueWaitSpacing: seven callers Wait at once on a queue of five. Five take a place at
// once and leave 100 ms apart; the other two find it full, come back when a place frees up,
// and leave in their turn: every 100 ms, one caller goes.
func TestQueueWaitSpacing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newQueue(t)
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

// TestQueueWaitDeadline: a Wait whose turn would come after its deadline fails at once and
// takes nothing; one whose turn comes exactly at the deadline goes.
func TestQueueWaitDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newQueue(t)
		ctx := context.Background()
		for range 3 { // turns at 0, 100 and 200 ms: the queue ends at 300 ms
			res, err := l.Allow(ctx, "k", tenPerSecond)
			require.NoError(t, err)
			require.True(t, res.Allowed)
		}
		start := time.Now()
		short, cancel := context.WithTimeout(ctx, 299*time.Millisecond)
		defer cancel()
		err := l.Wait(short, "k", tenPerSecond)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualError(t, err, `ratelimit: the queue would hold the request 300ms, past the context deadline: context deadline exceeded`)
		assert.Zero(t, time.Since(start), "failed at once")

		exact, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		require.NoError(t, l.Wait(exact, "k", tenPerSecond), "the failed Wait took no place")
		assert.Equal(t, 300*time.Millisecond, time.Since(start))
	})
}

// TestQueueWaitFullPastDeadline: the queue is full and drains after the deadline: fail at
// once, without waiting for a place.
func TestQueueWaitFullPastDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newQueue(t)
		ctx := context.Background()
		res, err := l.AllowN(ctx, "k", tenPerSecond, 5)
		require.NoError(t, err)
		require.True(t, res.Allowed)
		short, cancel := context.WithTimeout(ctx, 450*time.Millisecond)
		defer cancel()
		start := time.Now()
		err = l.Wait(short, "k", tenPerSecond)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualError(t, err, `ratelimit: the queue is full and drains in 500ms, past the context deadline: context deadline exceeded`)
		assert.Zero(t, time.Since(start))

		// With room for the turn at 500 ms, the Wait waits for a place (100 ms), then for
		// its turn (400 ms more).
		enough, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		require.NoError(t, l.Wait(enough, "k", tenPerSecond))
		assert.Equal(t, 500*time.Millisecond, time.Since(start))
	})
}

// TestQueueWaitCanceledKeepsPlace: a Wait canceled while it sleeps until its turn returns
// at once, and the place stays taken: the caller after it keeps its turn.
func TestQueueWaitCanceledKeepsPlace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newQueue(t)
		ctx := context.Background()
		res, err := l.Allow(ctx, "k", tenPerSecond) // turn at 0
		require.NoError(t, err)
		require.True(t, res.Allowed)

		canceled, cancel := context.WithCancel(ctx)
		time.AfterFunc(30*time.Millisecond, cancel)
		start := time.Now()
		require.ErrorIs(t, l.Wait(canceled, "k", tenPerSecond), context.Canceled) // turn at 100 ms
		assert.Equal(t, 30*time.Millisecond, time.Since(start))

		res, err = l.Allow(ctx, "k", tenPerSecond)
		require.NoError(t, err)
		assert.Equal(t, 170*time.Millisecond, res.Delay, "the next turn is at 200 ms")
	})
}

// TestQueueWaitClose: Close wakes a Wait sleeping until its turn.
func TestQueueWaitClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(WithAlgorithm(ratelimit.LeakyBucket))
		_, err := l.AllowN(context.Background(), "k", tenPerSecond, 2)
		require.NoError(t, err)
		done := make(chan error)
		go func() { done <- l.Wait(context.Background(), "k", tenPerSecond) }()
		synctest.Wait()
		require.NoError(t, l.Close())
		require.ErrorIs(t, <-done, ratelimit.ErrClosed)
	})
}

// TestQueueCleanup: a sweep drops a queue once it has drained, and not before.
func TestQueueCleanup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newQueue(t) // sweeps every minute, drops buckets drained for 5 minutes
		ctx := context.Background()
		slow := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 3} // drains an hour a request
		_, err := l.Allow(ctx, "fast", tenPerSecond)
		require.NoError(t, err)
		_, err = l.AllowN(ctx, "slow", slow, 2)
		require.NoError(t, err)
		time.Sleep(6*time.Minute + time.Second)
		synctest.Wait()
		require.Equal(t, 1, l.Len())
		// "slow" was kept: its queue still ends 2 h after it was filled.
		res, err := l.Allow(ctx, "slow", slow)
		require.NoError(t, err)
		assert.Equal(t, 2*time.Hour-6*time.Minute-time.Second, res.Delay)
	})
}
