package local

import (
	"context"
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
