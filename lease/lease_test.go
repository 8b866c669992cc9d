package lease_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/lease"
)

func TestMain(m *testing.M) { redistest.Main(m) }

var prefixes atomic.Int64

// world is one Redis and one key prefix, shared by the instances of a test. The tests run
// in a synctest bubble, whose clock the scripts read (WithClientClock): time moves only
// while every goroutine of the test waits on a timer, never while one waits on Redis.
type world struct {
	t      *testing.T
	server *redistest.Server
	prefix string
}

// inWorld runs f in a bubble, with a world on server (a new one if nil).
func inWorld(t *testing.T, server *redistest.Server, f func(w *world)) {
	if server == nil {
		server = redistest.NewServer(t)
	}
	prefix := fmt.Sprintf("lease%d:", prefixes.Add(1))
	synctest.Test(t, func(t *testing.T) {
		// The scripts count time from 2020; the bubble's clock starts in 2000.
		time.Sleep(time.Until(time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)))
		f(&world{t: t, server: server, prefix: prefix})
	})
}

// backend returns a Redis limiter of its own client, on the world's clock.
func (w *world) backend() (*distributed.Limiter, *redis.Client) {
	c := redis.NewClient(&redis.Options{Addr: w.server.Addr(), ContextTimeoutEnabled: true,
		MaxRetries: -1, DialTimeout: time.Second, DialerRetries: 1}) // a refused dial fails at once
	w.t.Cleanup(func() { _ = c.Close() })
	b, err := distributed.New(c, distributed.WithPrefix(w.prefix), distributed.WithClientClock(time.Hour),
		distributed.WithTimeout(-1)) // in the bubble, no deadline passes while Redis answers
	require.NoError(w.t, err)
	return b, c
}

// instance returns a lease Limiter that leases every key, over a backend of its own.
func (w *world) instance(opts ...lease.Option) (*lease.Limiter, *redis.Client) {
	b, c := w.backend()
	opts = append([]lease.Option{lease.WithHot(func(string, ratelimit.Limit) bool { return true })}, opts...)
	l := lease.New(b, opts...)
	w.t.Cleanup(func() { _ = l.Close() })
	return l, c
}

// probe takes all it can of the leased bucket of (key, limit) as an instance of its own
// and returns how many tokens it got.
type probe func() int

func (w *world) probe(key string, limit ratelimit.Limit) probe {
	b, _ := w.backend()
	var seq uint64
	return func() int {
		seq++
		g, err := b.Lease(context.Background(), key, limit, distributed.LeaseRequest{Instance: "probe", Seq: seq,
			Want: limit.Burst, Lease: time.Hour})
		require.NoError(w.t, err)
		return g.Tokens
	}
}

// TestCloseGivesBack: an instance closed while holding tokens gives them back at once.
// With 100/s, a burst of 1,000 and one instance, the first chunk is a target's worth of
// the rate, 10 tokens; one is spent, 9 are held.
func TestCloseGivesBack(t *testing.T) {
	inWorld(t, nil, func(w *world) {
		limit := ratelimit.Limit{Rate: 100, Burst: 1000}
		a, _ := w.instance(lease.WithInstances(1))
		res, err := a.Allow(context.Background(), "k", limit)
		require.NoError(w.t, err)
		assert.Equal(w.t, ratelimit.Result{Allowed: true, Limit: limit, Remaining: 9, ResetAfter: 100 * time.Millisecond}, res)
		take := w.probe("k", limit)
		require.Equal(w.t, 990, take())
		require.NoError(w.t, a.Close())
		assert.Equal(w.t, 9, take(), "a's 9 unspent tokens, back at once")
		_, err = a.Allow(context.Background(), "k", limit)
		assert.ErrorIs(w.t, err, ratelimit.ErrClosed)
	})
}

// TestKilledGivesBackAtLeaseEnd: an instance whose client is cut while it holds tokens
// gives them back when its lease (1 s) ends, from its record in Redis, and not before.
func TestKilledGivesBackAtLeaseEnd(t *testing.T) {
	inWorld(t, nil, func(w *world) {
		limit := ratelimit.Limit{Rate: 100, Burst: 1000}
		a, client := w.instance(lease.WithInstances(1))
		_, err := a.Allow(context.Background(), "k", limit)
		require.NoError(w.t, err)
		take := w.probe("k", limit)
		require.Equal(w.t, 990, take())
		require.NoError(w.t, client.Close()) // a can no longer reach Redis

		// 999 ms on, 99.9 tokens have come back by refill: 99 whole ones.
		time.Sleep(999 * time.Millisecond)
		assert.Equal(w.t, 99, take())
		// 2 ms on, past a's lease: 1.1 tokens of refill, and a's record gives back the 10 it
		// held at its call. (It had spent 1 since: the caveat of docs/leases.md, a lapsed
		// lease's chunk counts whole.)
		time.Sleep(2 * time.Millisecond)
		assert.Equal(w.t, 11, take())
	})
}

// TestRefusedChunkCached: a refused chunk answers for its RetryAfter without Redis, and
// the denial says when this instance's share of the refill covers its chunk.
func TestRefusedChunkCached(t *testing.T) {
	inWorld(t, nil, func(w *world) {
		limit := ratelimit.Limit{Rate: 100, Burst: 1000}
		a, _ := w.instance(lease.WithInstances(1))
		take := w.probe("k", limit)
		require.Equal(w.t, 1000, take())
		before, err := w.server.ScriptCalls()
		require.NoError(w.t, err)
		// The chunk asked for is 10 tokens; with two holders (a and the probe) a's share of
		// the refill is 50/s: 200 ms.
		res, err := a.Allow(context.Background(), "k", limit)
		require.NoError(w.t, err)
		assert.Equal(w.t, ratelimit.Result{Limit: limit, RetryAfter: 200 * time.Millisecond, ResetAfter: 10 * time.Second}, res)
		for range 100 {
			time.Sleep(time.Millisecond)
			res, err := a.Allow(context.Background(), "k", limit)
			require.NoError(w.t, err)
			require.False(w.t, res.Allowed)
		}
		after, err := w.server.ScriptCalls()
		require.NoError(w.t, err)
		assert.Equal(w.t, int64(1), after-before, "one call for the refused chunk, none while it is cached")
	})
}
