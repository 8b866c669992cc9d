package local_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/internal/args"
)

// peak runs callers goroutines that each acquire a permit of key under max from l, hold it
// for hold (fake time, in a synctest bubble), and release it; it returns the highest number
// of holders running at once, as the holders count themselves, and how many got a permit.
func peak(t *testing.T, l concurrency.Limiter, key string, callers, max int, hold func()) (top, served int64) {
	t.Helper()
	var running, granted, most atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			p, err := l.Acquire(t.Context(), key, max)
			if !assert.NoError(t, err) {
				return
			}
			defer p.Release()
			granted.Add(1)
			n := running.Add(1)
			for old := most.Load(); n > old && !most.CompareAndSwap(old, n); old = most.Load() {
			}
			hold()
			running.Add(-1)
		})
	}
	wg.Wait()
	return most.Load(), granted.Load()
}

func TestPeakIsMax(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := local.New()
		defer l.Close()
		// 1,000 callers fit the default queue (1,000), so every one is served; each holds
		// its permit 1 ms of fake time, so 10 are always running while others wait.
		top, served := peak(t, l, "k", 1000, 10, func() { time.Sleep(time.Millisecond) })
		assert.Equal(t, int64(10), top)
		assert.Equal(t, int64(1000), served)
	})
}

// enqueue starts a goroutine that acquires key under max and sends its name, or the error,
// on out once it returns; it returns once the goroutine waits in the queue (or has
// returned), so that callers started one after another arrive in that order.
func enqueue(t *testing.T, l concurrency.Limiter, ctx context.Context, key string, max int, name string, out chan<- string) {
	t.Helper()
	go func() {
		p, err := l.Acquire(ctx, key, max)
		if err != nil {
			out <- name + ": " + err.Error()
			return
		}
		out <- name
		p.Release()
	}()
	synctest.Wait()
}

func TestOldestFirstServesInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := local.New(local.WithQueue(10, local.OldestFirst))
		defer l.Close()
		first, err := l.Acquire(t.Context(), "k", 1)
		require.NoError(t, err)
		out := make(chan string, 10)
		for i := range 5 {
			enqueue(t, l, t.Context(), "k", 1, fmt.Sprint("w", i), out)
		}
		first.Release()
		var got []string
		for range 5 {
			got = append(got, <-out)
		}
		assert.Equal(t, []string{"w0", "w1", "w2", "w3", "w4"}, got)
	})
}

func TestOldestFirstRefusesNewcomerWhenFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := local.New(local.WithQueue(2, local.OldestFirst))
		defer l.Close()
		first, err := l.Acquire(t.Context(), "k", 1)
		require.NoError(t, err)
		out := make(chan string, 3)
		enqueue(t, l, t.Context(), "k", 1, "w0", out)
		enqueue(t, l, t.Context(), "k", 1, "w1", out)
		_, err = l.Acquire(t.Context(), "k", 1)
		require.ErrorIs(t, err, concurrency.ErrQueueFull)
		first.Release()
		assert.Equal(t, "w0", <-out)
		assert.Equal(t, "w1", <-out)
	})
}

func TestNewestFirstEvictsOldestWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := local.New(local.WithQueue(2, local.NewestFirst))
		defer l.Close()
		first, err := l.Acquire(t.Context(), "k", 1)
		require.NoError(t, err)
		out := make(chan string, 3)
		enqueue(t, l, t.Context(), "k", 1, "w0", out)
		enqueue(t, l, t.Context(), "k", 1, "w1", out)
		// The queue holds w0 and w1: w2 takes the oldest's place, and w0 is refused.
		enqueue(t, l, t.Context(), "k", 1, "w2", out)
		assert.Equal(t, "w0: "+concurrency.ErrQueueFull.Error()+": no permit free and no room to wait", <-out)
		// The newest is served first.
		first.Release()
		assert.Equal(t, "w2", <-out)
		assert.Equal(t, "w1", <-out)
	})
}

func TestNoQueue(t *testing.T) {
	l := local.New(local.WithQueue(-1, local.NewestFirst))
	defer l.Close()
	p, err := l.Acquire(t.Context(), "k", 1)
	require.NoError(t, err)
	defer p.Release()
	_, err = l.Acquire(t.Context(), "k", 1)
	require.ErrorIs(t, err, concurrency.ErrQueueFull)
}

// free reports whether key has exactly n free permits under max: n TryAcquires succeed and
// the next fails. The permits are released again.
func free(t *testing.T, l concurrency.Limiter, key string, max int) int {
	t.Helper()
	var ps []concurrency.Permit
	defer func() {
		for _, p := range ps {
			p.Release()
		}
	}()
	for {
		p, ok, err := l.TryAcquire(t.Context(), key, max)
		require.NoError(t, err)
		if !ok {
			return len(ps)
		}
		ps = append(ps, p)
	}
}

func TestCancelledWaiterLeaksNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	synctest.Test(t, func(t *testing.T) {
		l := local.New()
		defer l.Close()
		holder, err := l.Acquire(t.Context(), "k", 1)
		require.NoError(t, err)

		ctx, cancel := context.WithCancel(t.Context())
		out := make(chan string, 2)
		enqueue(t, l, ctx, "k", 1, "cancelled", out)
		timed, stop := context.WithTimeout(t.Context(), time.Second)
		defer stop()
		enqueue(t, l, timed, "k", 1, "timed out", out)
		cancel()
		assert.Equal(t, "cancelled: local: waiting for a permit: context canceled", <-out)
		time.Sleep(time.Second) // fake time: the second waiter's deadline passes
		assert.Equal(t, "timed out: local: waiting for a permit: context deadline exceeded", <-out)

		holder.Release()
		assert.Equal(t, 1, free(t, l, "k", 1), "the waiters that left hold nothing")
	})
	// Goroutines of earlier tests may still be on their way out: wait for them, never
	// for more than were running before.
	for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	assert.LessOrEqual(t, runtime.NumGoroutine(), before, "goroutines left behind")
}

func TestCancelRacingGrantLeaksNothing(t *testing.T) {
	// A waiter whose context ends as its permit is handed over must pass the permit on. Run
	// the race many times; each round ends with the key's one permit free.
	l := local.New()
	defer l.Close()
	for range 1000 {
		holder, err := l.Acquire(t.Context(), "k", 1)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			p, err := l.Acquire(ctx, "k", 1)
			p.Release()
			done <- err
		}()
		go cancel()
		holder.Release()
		<-done
		require.Equal(t, 1, free(t, l, "k", 1))
	}
}

func TestSecondReleaseChangesNothing(t *testing.T) {
	l := local.New()
	defer l.Close()
	p1, err := l.Acquire(t.Context(), "k", 1)
	require.NoError(t, err)
	p1.Release()
	// p2 likely reuses p1's pooled state: p1's second Release must not free p2.
	p2, err := l.Acquire(t.Context(), "k", 1)
	require.NoError(t, err)
	p1.Release()
	copyOfP2 := p2
	assert.Equal(t, 0, free(t, l, "k", 1))
	p2.Release()
	copyOfP2.Release()
	assert.Equal(t, 1, free(t, l, "k", 1))
	var zero concurrency.Permit
	zero.Release() // holds nothing: does nothing
	assert.False(t, zero.Held())
	assert.True(t, p2.Held())
}

func TestReleaseFromAnotherGoroutine(t *testing.T) {
	l := local.New()
	defer l.Close()
	p, err := l.Acquire(t.Context(), "k", 1)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(p.Release)
	}
	wg.Wait()
	assert.Equal(t, 1, free(t, l, "k", 1))
}

func TestMaxPerCall(t *testing.T) {
	// A key is the key alone: calls with different max values share its holders.
	l := local.New()
	defer l.Close()
	p, err := l.Acquire(t.Context(), "k", 1)
	require.NoError(t, err)
	defer p.Release()
	assert.Equal(t, 2, free(t, l, "k", 3), "one of 3 is held")
	assert.Equal(t, 0, free(t, l, "k", 1))
	limit, ok := l.Limit("k")
	assert.True(t, ok)
	assert.Equal(t, 1, limit, "the last call's max")
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := local.New()
		p, err := l.Acquire(t.Context(), "k", 1)
		require.NoError(t, err)
		out := make(chan string, 1)
		enqueue(t, l, t.Context(), "k", 1, "waiter", out)
		require.NoError(t, l.Close())
		assert.Equal(t, "waiter: local: ratelimit: limiter closed", <-out)
		_, err = l.Acquire(t.Context(), "k", 1)
		assert.ErrorIs(t, err, ratelimit.ErrClosed)
		_, _, err = l.TryAcquire(t.Context(), "k", 1)
		assert.ErrorIs(t, err, ratelimit.ErrClosed)
		p.Release() // after Close: allowed
		assert.NoError(t, l.Close())
	})
}

func TestInvalidArguments(t *testing.T) {
	l := local.New()
	defer l.Close()
	done, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		key  string
		max  int
		want error
	}{
		{"empty key", t.Context(), "", 1, ratelimit.ErrInvalidArgument},
		{"key too long", t.Context(), strings.Repeat("k", args.MaxKeyLen+1), 1, ratelimit.ErrInvalidArgument},
		{"zero max", t.Context(), "k", 0, ratelimit.ErrInvalidArgument},
		{"negative max", t.Context(), "k", -1, ratelimit.ErrInvalidArgument},
		{"ended context", done, "k", 1, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := l.Acquire(tc.ctx, tc.key, tc.max)
			assert.ErrorIs(t, err, tc.want)
			_, ok, err := l.TryAcquire(tc.ctx, tc.key, tc.max)
			assert.ErrorIs(t, err, tc.want)
			assert.False(t, ok)
		})
	}
}

func TestKeyCapNeverAdmitsUnlimited(t *testing.T) {
	// 64 keys at most: one per shard. 1,000 keys each holding its one permit: the tracked
	// keys hold one each, and the keys that find their shard full share its overflow key,
	// one permit per shard. So at most 64 + 64 are granted.
	l := local.New(local.WithMaxKeys(64))
	defer l.Close()
	var held []concurrency.Permit
	for i := range 1000 {
		p, ok, err := l.TryAcquire(t.Context(), fmt.Sprint("key", i), 1)
		require.NoError(t, err)
		if ok {
			held = append(held, p)
		}
	}
	assert.LessOrEqual(t, len(held), 128)
	assert.GreaterOrEqual(t, len(held), 64, "every shard's first key has its own permit")
	assert.LessOrEqual(t, l.Tracked(), 64)
	for _, p := range held {
		p.Release()
	}
	// Idle keys make room: each new key gets its own permit now.
	for i := range 1000 {
		p, ok, err := l.TryAcquire(t.Context(), fmt.Sprint("new", i), 1)
		require.NoError(t, err)
		require.True(t, ok)
		p.Release()
	}
	assert.LessOrEqual(t, l.Tracked(), 64)
}

func TestQueueFullIsNotABackendFailure(t *testing.T) {
	// The three ways Acquire fails are told apart with errors.Is alone.
	l := local.New(local.WithQueue(-1, local.OldestFirst))
	defer l.Close()
	p, err := l.Acquire(t.Context(), "k", 1)
	require.NoError(t, err)
	defer p.Release()
	_, err = l.Acquire(t.Context(), "k", 1)
	assert.True(t, errors.Is(err, concurrency.ErrQueueFull))
	assert.False(t, errors.Is(err, ratelimit.ErrTimeout))
	assert.False(t, errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded))
}

func TestCloseRacingAcquire(t *testing.T) {
	// Callers arriving as Close runs are never left waiting: each gets a permit, or
	// ErrClosed (or ErrQueueFull) at once.
	for range 100 {
		l := local.New()
		holder, err := l.Acquire(t.Context(), "k", 1)
		require.NoError(t, err)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				p, err := l.Acquire(t.Context(), "k", 1)
				if err != nil {
					assert.ErrorIs(t, err, ratelimit.ErrClosed)
				}
				p.Release()
			})
		}
		require.NoError(t, l.Close())
		wg.Wait() // a caller left waiting would hang here
		holder.Release()
	}
}
