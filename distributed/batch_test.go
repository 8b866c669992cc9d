package distributed

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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// batchFixture is a limiter on a real Redis whose direct slots are all taken, so that every
// decision queues and leaves only when the test hands the queue to a pipeline.
func batchFixture(t *testing.T) (*Limiter, *redistest.Server) {
	server := redistest.NewServer(t)
	client := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	now := time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)
	l, err := New(client, WithClock(func() time.Time { return now }), WithTimeout(10*time.Second))
	require.NoError(t, err)
	require.NotNil(t, l.batch, "a *redis.Client can pipeline")
	l.batch.active = maxDirect
	return l, server
}

// queued waits until n decisions wait in b's queue.
func queued(b *batcher, n int) {
	for {
		b.mu.Lock()
		k := len(b.queue)
		b.mu.Unlock()
		if k >= n {
			return
		}
		runtime.Gosched()
	}
}

// evalshaCalls returns how many EVALSHA commands server has run.
func evalshaCalls(t *testing.T, server *redistest.Server) int {
	info, err := server.Do("INFO", "commandstats")
	require.NoError(t, err)
	for line := range strings.Lines(info.(string)) {
		if rest, ok := strings.CutPrefix(line, "cmdstat_evalsha:calls="); ok {
			n, err := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			require.NoError(t, err)
			return n
		}
	}
	return 0
}

// TestBatchDecidesInOrder: decisions queued on one bucket leave in one pipeline and are
// decided one after the other, each seeing the ones before it: exactly Burst win, with the
// remaining tokens counting down.
func TestBatchDecidesInOrder(t *testing.T) {
	l, server := batchFixture(t)
	const waiting, burst = 12, 8
	limit := ratelimit.Limit{Rate: 1e-3, Burst: burst}
	results := make(chan ratelimit.Result, waiting)
	var wg sync.WaitGroup
	for range waiting {
		wg.Go(func() {
			res, err := l.Allow(context.Background(), "k", limit)
			assert.NoError(t, err)
			results <- res
		})
	}
	queued(l.batch, waiting)
	before := evalshaCalls(t, server)
	l.batch.release() // one direct slot frees up: its successor sends the queue
	wg.Wait()
	close(results)

	remaining := map[int]bool{}
	denied := 0
	for res := range results {
		if res.Allowed {
			remaining[res.Remaining] = true
		} else {
			denied++
		}
	}
	require.Equal(t, map[int]bool{7: true, 6: true, 5: true, 4: true, 3: true, 2: true, 1: true, 0: true}, remaining)
	require.Equal(t, waiting-burst, denied)
	require.Equal(t, waiting, evalshaCalls(t, server)-before, "one EVALSHA per decision")

	l.batch.mu.Lock()
	defer l.batch.mu.Unlock()
	require.Equal(t, maxDirect-1, l.batch.active, "the sender left when the queue was empty")
	require.Empty(t, l.batch.queue)
}

// TestBatchWithdraw: a decision whose context ends while it waits in the queue is withdrawn
// and never reaches Redis.
func TestBatchWithdraw(t *testing.T) {
	l, server := batchFixture(t)
	limit := ratelimit.Limit{Rate: 1, Burst: 1}
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := l.Allow(ctx, "k", limit)
		errs <- err
	}()
	queued(l.batch, 1)
	cancel()
	require.ErrorIs(t, <-errs, context.Canceled)
	l.batch.mu.Lock()
	require.Empty(t, l.batch.queue)
	l.batch.mu.Unlock()

	// The bucket is untouched: the next decision, sent on its own, gets its only token.
	l.batch.active = 0
	res, err := l.Allow(context.Background(), "k", limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, 1, evalshaCalls(t, server))
}

// TestBatchScriptFlushed: a pipeline sent after Redis lost the script (SCRIPT FLUSH, a
// restart, a failover) gets NOSCRIPT for every call and sends them again with EVAL; no call
// fails and none is counted twice.
func TestBatchScriptFlushed(t *testing.T) {
	l, server := batchFixture(t)
	const waiting = 6
	limit := ratelimit.Limit{Rate: 1e-3, Burst: 4}
	_, err := server.Do("SCRIPT", "FLUSH")
	require.NoError(t, err)

	var allowed sync.Map
	var wg sync.WaitGroup
	for i := range waiting {
		wg.Go(func() {
			res, err := l.Allow(context.Background(), "k", limit)
			assert.NoError(t, err)
			allowed.Store(i, res.Allowed)
		})
	}
	queued(l.batch, waiting)
	l.batch.release()
	wg.Wait()
	admitted := 0
	allowed.Range(func(_, v any) bool {
		if v.(bool) {
			admitted++
		}
		return true
	})
	require.Equal(t, 4, admitted)
}

// onWire returns how many direct calls and pipeline senders b has at work.
func onWire(b *batcher) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.active
}

// TestBatchLastCallReturns: every call on the wire returns just as a decision joins the
// queue. The decision must still be sent, at once: deciding to queue and queueing are one
// step, so the last call to return finds it in the queue.
func TestBatchLastCallReturns(t *testing.T) {
	l, _ := batchFixture(t) // maxDirect calls on the wire
	l.batch.queued = func() {
		for range maxDirect {
			l.batch.release()
		}
	}
	// A healthy Redis answers in far less; a decision left in the queue would wait it out.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := l.Allow(ctx, "k", ratelimit.Limit{Rate: 1, Burst: 1})
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Eventually(t, func() bool { return onWire(l.batch) == 0 }, 5*time.Second, time.Millisecond,
		"the sender leaves when the queue is empty")
}

// TestBatchStress runs many goroutines on one bucket and widens the moment after a decision
// has joined the queue until nothing is on the wire any more: each queued decision must
// still be answered, none twice. With a clock that stands still, exactly Burst are allowed.
func TestBatchStress(t *testing.T) {
	server := redistest.NewServer(t)
	client := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	now := time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)
	l, err := New(client, WithClock(func() time.Time { return now }), WithTimeout(10*time.Second))
	require.NoError(t, err)
	var widened atomic.Int64
	l.batch.queued = func() {
		widened.Add(1)
		for onWire(l.batch) > 0 {
			runtime.Gosched()
		}
	}
	const goroutines, calls, burst = 24, 20, 100
	limit := ratelimit.Limit{Rate: 1e-3, Burst: burst}
	var mu sync.Mutex
	allowed := 0
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range calls {
				// A decision lost in the queue would fail here, at the deadline.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				res, err := l.Allow(ctx, "hot", limit)
				cancel()
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				if res.Allowed {
					allowed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Positive(t, widened.Load(), "no decision queued: the test tested nothing")
	t.Logf("%d of %d decisions queued", widened.Load(), goroutines*calls)
	require.Equal(t, burst, allowed)
	require.Equal(t, goroutines*calls, evalshaCalls(t, server), "one script run per decision")
	require.Zero(t, onWire(l.batch))
}
