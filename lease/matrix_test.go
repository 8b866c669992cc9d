package lease_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/lease"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
)

// The features leases meet: fallback around them when Redis fails, refunds (not claimed),
// the rules' limits that keep their usage (not leased), observers of decisions and of
// grants. The limit refills 0.008 tokens a second, nothing in a test's time, so that the
// counts are exact: 8 instances, so fallback's share is a burst of 25.
var matrixLimit = ratelimit.Limit{Rate: 0.008, Burst: 200}

func leaseAll(string, ratelimit.Limit) bool { return true }

// TestFallbackRedisUnreachable: with Redis unreachable from the start, the lease has no
// chunk and fails, and fallback's secondary decides under this instance's share.
func TestFallbackRedisUnreachable(t *testing.T) {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	b, err := distributed.New(client)
	require.NoError(t, err)
	l := lease.New(b, lease.WithHot(leaseAll))
	t.Cleanup(func() { _ = l.Close() })
	_, err = l.Allow(context.Background(), "k", matrixLimit)
	require.Error(t, err, "no allowance and no Redis")

	secondary := local.New()
	t.Cleanup(func() { _ = secondary.Close() })
	f := fallback.New(l, secondary, fallback.WithInstances(8))
	assert.Equal(t, 25, allowedOf(t, f, 100))
}

// TestFallbackRedisLost: an instance that loses Redis spends what it holds first, then
// fallback's secondary decides.
func TestFallbackRedisLost(t *testing.T) {
	inWorld(t, nil, func(w *world) {
		l, client := w.instance()
		secondary := local.New()
		w.t.Cleanup(func() { _ = secondary.Close() })
		f := fallback.New(l, secondary, fallback.WithInstances(8))
		// The first chunk is the instance's fair share of a target's refill, rounded up: 1.
		// Then a second: Redis still answers, and the second decision asks for a third chunk
		// ahead, which lands (Settle) before Redis goes: without the wait, whether it landed
		// was the machine's to say (25 or 26).
		require.Equal(w.t, 2, allowedOf(w.t, f, 2))
		lease.Settle(l)
		require.NoError(w.t, client.Close())
		assert.Equal(w.t, 1+25, allowedOf(w.t, f, 100), "the token held, then the secondary's share")
	})
}

// allowedOf makes n decisions on "k" and returns how many were allowed.
func allowedOf(t *testing.T, l ratelimit.Limiter, n int) int {
	t.Helper()
	allowed := 0
	for range n {
		res, err := l.Allow(context.Background(), "k", matrixLimit)
		require.NoError(t, err)
		if res.Allowed {
			allowed++
		}
	}
	return allowed
}

// TestNoRefundClaimed: a lease claims no Inspector (a refund to Redis would miss the
// tokens a chunk holds), nor does fallback around it.
func TestNoRefundClaimed(t *testing.T) {
	b, err := distributed.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}))
	require.NoError(t, err)
	l := lease.New(b, lease.WithHot(leaseAll))
	t.Cleanup(func() { _ = l.Close() })
	_, ok := ratelimit.As[ratelimit.Inspector](l)
	assert.False(t, ok)
	_, ok = ratelimit.As[ratelimit.Inspector](fallback.New(l, local.New()))
	assert.False(t, ok)
	_, ok = ratelimit.As[ratelimit.Inspector](b)
	assert.True(t, ok, "the backend alone has one")
}

// TestNotLeased: a key WithHot leaves out, and a limit that keeps its usage (a rules file's
// named policy) or names another algorithm, are the backend's own buckets.
func TestNotLeased(t *testing.T) {
	inWorld(t, nil, func(w *world) {
		b, _ := w.backend()
		l := lease.New(b, lease.WithHot(func(key string, _ ratelimit.Limit) bool { return key != "cold" }))
		w.t.Cleanup(func() { _ = l.Close() })
		ctx := context.Background()
		for _, c := range []struct {
			key   string
			limit ratelimit.Limit
			tag   string
		}{
			{"cold", matrixLimit, ":tb:"},
			{"kept", ratelimit.Limit{Rate: 1, Burst: 10, KeepUsage: true}, ":tbk"},
			{"window", ratelimit.Limit{Rate: 1, Burst: 10, Algorithm: ratelimit.FixedWindow}, ":fw:"},
			{"hot", matrixLimit, ":tl:"},
		} {
			res, err := l.Allow(ctx, c.key, c.limit)
			require.NoError(w.t, err)
			require.True(w.t, res.Allowed)
			keys, err := w.server.Do("KEYS", w.prefix+c.key+":*")
			require.NoError(w.t, err)
			require.Len(w.t, keys, 1, c.key)
			assert.Contains(w.t, keys.([]any)[0], c.tag, c.key)
		}
		assert.ErrorIs(w.t, l.Wait(ctx, "hot", matrixLimit), ratelimit.ErrNotSupported)
	})
}

// recorder keeps the decisions it is told of.
type recorder struct {
	mu sync.Mutex
	ds []observe.Decision
}

func (r *recorder) ObserveDecision(_ context.Context, d observe.Decision) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d.Duration = 0
	r.ds = append(r.ds, d)
}

// TestObservers: observe.Wrap sees leased decisions as decisions; WithObserver sees the
// grants, each call to Redis, as grants.
func TestObservers(t *testing.T) {
	inWorld(t, nil, func(w *world) {
		grants, decisions := &recorder{}, &recorder{}
		l, _ := w.instance(lease.WithObserver("hot", grants))
		o := observe.Wrap(l, decisions, "api")
		take := w.probe("k", matrixLimit)
		require.Equal(w.t, matrixLimit.Burst, take()) // the bucket drained
		for range 3 {
			_, err := o.Allow(context.Background(), "k", matrixLimit)
			require.NoError(w.t, err)
		}
		require.Len(w.t, decisions.ds, 3)
		for _, d := range decisions.ds {
			assert.Equal(w.t, observe.OutcomeDenied, d.Outcome)
			assert.False(w.t, d.Lease)
		}
		// One refused chunk, cached: one grant for three decisions.
		assert.Equal(w.t, []observe.Decision{{Policy: "hot", Backend: "lease", Lease: true, Outcome: observe.OutcomeDenied,
			Cost: 1, Limit: matrixLimit, Priority: priority.Critical}}, grants.ds)
	})
}

// TestErrorsHoldNoKey: the lease's errors never print the key.
func TestErrorsHoldNoKey(t *testing.T) {
	b, err := distributed.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1}),
		distributed.WithTimeout(time.Second))
	require.NoError(t, err)
	l := lease.New(b, lease.WithHot(leaseAll), lease.WithShards(4))
	t.Cleanup(func() { _ = l.Close() })
	for _, n := range []int{1, 51} {
		_, err := l.AllowN(context.Background(), "secret-key", matrixLimit, n)
		require.Error(t, err)
		assert.False(t, strings.Contains(err.Error(), "secret-key"), err.Error())
	}
}
