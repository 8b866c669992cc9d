package distributed

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// closed reports whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestBound: a call's context has its exact deadline; its Done channel, shared by the calls
// whose deadlines fall in one tick, closes at the tick's end, never before the deadline and
// at most a tick after; the limiter's deadline is reported from the moment it passes.
func TestBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBound(8 * time.Millisecond)
		require.Equal(t, 500*time.Microsecond, b.width, "a sixteenth of the timeout")
		require.Equal(t, maxTick, newBound(time.Second).width)

		type key struct{}
		values := context.WithValue(context.Background(), key{}, "v")
		t0 := time.Now()
		var c1, c2, c3 bounded
		b.set(&c1, values, t0)
		time.Sleep(300 * time.Microsecond)
		b.set(&c2, values, time.Now()) // deadline within c1's tick: shares its channel
		time.Sleep(300 * time.Microsecond)
		b.set(&c3, values, time.Now()) // 8.6 ms: past c1's tick, which ends at 8.5

		d, ok := c1.Deadline()
		require.True(t, ok)
		require.Equal(t, t0.Add(8*time.Millisecond), d)
		require.Equal(t, "v", c1.Value(key{}))
		require.Equal(t, c1.Done(), c2.Done())
		require.NotEqual(t, c1.Done(), c3.Done())
		require.NoError(t, c1.Err())
		require.NoError(t, c1.cause())

		time.Sleep(8*time.Millisecond - 600*time.Microsecond) // t0 + 8 ms: c1's deadline
		assert.ErrorIs(t, c1.cause(), ratelimit.ErrTimeout, "the deadline has passed")
		assert.ErrorIs(t, cause(&c1), context.DeadlineExceeded)
		assert.NoError(t, c2.cause())
		assert.False(t, closed(c1.Done()), "the tick has not ended")
		assert.NoError(t, c1.Err(), "Err waits for Done")

		time.Sleep(500 * time.Microsecond) // t0 + 8.5 ms: the first tick's end
		synctest.Wait()
		assert.True(t, closed(c1.Done()))
		assert.Equal(t, context.DeadlineExceeded, c1.Err())
		assert.Equal(t, context.DeadlineExceeded, c2.Err(), "0.2 ms after its deadline")
		assert.False(t, closed(c3.Done()))

		time.Sleep(600 * time.Microsecond) // t0 + 9.1 ms: c3's tick, from 8.6 + 8 + 0.5
		synctest.Wait()
		assert.True(t, closed(c3.Done()))

		// A context derived from a bounded one ends with it.
		var c4 bounded
		b.set(&c4, values, time.Now())
		derived, cancel := context.WithCancel(&c4)
		defer cancel()
		time.Sleep(8*time.Millisecond + 500*time.Microsecond)
		synctest.Wait()
		assert.Equal(t, context.DeadlineExceeded, derived.Err())
	})
}
