package ratelimittest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// queueRules are the rules of Wait with ratelimit.LeakyBucket: a place in the queue is
// reserved at once, then the caller sleeps until its turn. Each rule runs on a limiter with
// no buckets yet, inside a testing/synctest bubble whose clock the limiter reads, so that
// turns come exactly on time: a leaky bucket limiter with a limit that names no algorithm,
// any other with one that names ratelimit.LeakyBucket.
var queueRules = []rule{
	{"Spacing", queueSpacing},
	{"Deadline", queueDeadline},
	{"FullPastDeadline", queueFullPastDeadline},
	{"CanceledKeepsPlace", queueCanceledKeepsPlace},
}

// queueLimit is a queue of 5 places drained every 100 ms, on h's limiter.
func queueLimit(h harness) ratelimit.Limit {
	limit := ratelimit.Limit{Rate: 10, Burst: 5}
	if h.Algorithm != ratelimit.LeakyBucket {
		limit.Algorithm = ratelimit.LeakyBucket
	}
	return limit
}

// queueSpacing: seven callers Wait at once on a queue of five. Five take a place at once and
// leave 100 ms apart; the other two find it full, come back when a place frees up, and leave
// in their turn: every 100 ms, one caller goes.
func queueSpacing(t testing.TB, h harness) {
	l, tenPerSecond := h.Limiter, queueLimit(h)
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
}

// queueDeadline: a Wait whose turn would come after its deadline fails at once and takes
// nothing; one whose turn comes exactly at the deadline goes.
func queueDeadline(t testing.TB, h harness) {
	l, tenPerSecond := h.Limiter, queueLimit(h)
	ctx := context.Background()
	// turns at 0, 100 and 200 ms: the queue ends at 300 ms
	res, err := l.AllowN(ctx, "k", tenPerSecond, 3)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	start := time.Now()
	short, cancel := context.WithTimeout(ctx, 299*time.Millisecond)
	defer cancel()
	err = l.Wait(short, "k", tenPerSecond)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.EqualError(t, err, `ratelimit: the queue would hold the request 300ms, past the context deadline: context deadline exceeded`)
	assert.Zero(t, time.Since(start), "failed at once")

	exact, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	require.NoError(t, l.Wait(exact, "k", tenPerSecond), "the failed Wait took no place")
	assert.Equal(t, 300*time.Millisecond, time.Since(start))
}

// queueFullPastDeadline: the queue is full and drains after the deadline: fail at once,
// without waiting for a place. With room for the turn at 500 ms, the Wait waits for a place
// (100 ms), then for its turn (400 ms more).
func queueFullPastDeadline(t testing.TB, h harness) {
	l, tenPerSecond := h.Limiter, queueLimit(h)
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

	enough, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	require.NoError(t, l.Wait(enough, "k", tenPerSecond))
	assert.Equal(t, 500*time.Millisecond, time.Since(start))
}

// queueCanceledKeepsPlace: a Wait canceled while it sleeps until its turn returns at once,
// and the place stays taken: the caller after it keeps its turn.
func queueCanceledKeepsPlace(t testing.TB, h harness) {
	l, tenPerSecond := h.Limiter, queueLimit(h)
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
}
