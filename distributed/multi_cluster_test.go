package distributed_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

func newClusterClientOf(t *testing.T, cluster *redistest.Cluster) *redis.ClusterClient {
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 cluster.Addrs(),
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// Keys "{b}…" hash to slot 3300 and "{a}…" to slot 15495 (CRC16 of "b" and "a"): different
// slots, on different masters of a 3-node Cluster, decided b first.
const slotB, slotA = "{b}:user", "{a}:user"

// TestAllowAllCrossSlotRefund: the first slot admits and is charged, the second denies; the
// first is refunded in the same call. Three scripts: decide b, decide a, refund b. Redis
// then holds no bucket for b: the refund gave back its only token, and a full bucket is a
// missing key.
func TestAllowAllCrossSlotRefund(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t)
	prefix := uniquePrefix()
	l := newLimiter(t, newClusterClientOf(t, cluster), ratelimittest.NewClock(), distributed.WithPrefix(prefix))
	limit := ratelimit.Limit{Rate: 1, Burst: 3}
	drained := ratelimit.Limit{Rate: 1, Burst: 1}
	res, err := l.Allow(context.Background(), slotA, drained)
	require.NoError(t, err)
	require.True(t, res.Allowed)

	calls := func() int64 {
		var n int64
		for _, node := range cluster.Nodes() {
			n += scriptCalls(t, node)
		}
		return n
	}
	// The first call on each master loads the script (NOSCRIPT, then EVAL): not counted.
	assert.Equal(t, 2, peekRemaining(t, l, slotB, limit))
	assert.Equal(t, 0, peekRemaining(t, l, slotA, drained))
	before := calls()
	mr, err := l.AllowAll(context.Background(), []ratelimit.Request{
		{Key: slotA, Limit: drained, Name: "a"},
		{Key: slotB, Limit: limit, Name: "b"},
	})
	require.NoError(t, err)
	assert.False(t, mr.Allowed)
	assert.Equal(t, 0, mr.Binding)
	assert.Equal(t, int64(1e6), mr.Results[0].RetryAfter.Microseconds(), "one token a second")
	assert.True(t, mr.Results[1].Allowed, "AllowN alone would have allowed b")
	assert.Equal(t, 2, mr.Results[1].Remaining)
	assert.Equal(t, int64(3), calls()-before, "decide b, decide a, refund b")

	master := cluster.MasterOf(t, prefix+slotB)
	exists, err := master.Do("EXISTS", prefix+slotB+":tb:1:3")
	require.NoError(t, err)
	assert.Equal(t, int64(0), exists, "b was given its token back")
	assert.Equal(t, 2, peekRemaining(t, l, slotB, limit), "full: 3, less the one Peek asks about")

	// Allowed: both slots charged, each once.
	mr, err = l.AllowAll(context.Background(), []ratelimit.Request{
		{Key: slotB, Limit: limit, Name: "b"},
		{Key: "{a}:other", Limit: limit, Name: "a"},
	})
	require.NoError(t, err)
	require.True(t, mr.Allowed)
	assert.Equal(t, 1, peekRemaining(t, l, slotB, limit))
	assert.Equal(t, 1, peekRemaining(t, l, "{a}:other", limit))
}

// TestAllowAllCrossSlotRefuse: with CrossSlotRefuse, keys in different slots are an error
// wrapping ErrCrossSlot, naming no key, before any script runs; keys of one slot are decided.
func TestAllowAllCrossSlotRefuse(t *testing.T) {
	t.Parallel()
	cluster := redistest.NewCluster(t)
	l := newLimiter(t, newClusterClientOf(t, cluster), ratelimittest.NewClock(),
		distributed.WithCrossSlot(distributed.CrossSlotRefuse))
	limit := ratelimit.Limit{Rate: 1, Burst: 3}
	assert.Equal(t, 2, peekRemaining(t, l, slotA, limit)) // loads the script on a's master
	before := int64(0)
	for _, node := range cluster.Nodes() {
		before += scriptCalls(t, node)
	}
	mr, err := l.AllowAll(context.Background(), []ratelimit.Request{
		{Key: slotA, Limit: limit, Name: "a"},
		{Key: slotB, Limit: limit, Name: "b"},
	})
	require.ErrorIs(t, err, distributed.ErrCrossSlot)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	assert.False(t, mr.Allowed)
	assert.NotContains(t, err.Error(), "user")
	after := int64(0)
	for _, node := range cluster.Nodes() {
		after += scriptCalls(t, node)
	}
	assert.Equal(t, before, after, "no script ran")

	mr, err = l.AllowAll(context.Background(), []ratelimit.Request{
		{Key: "{a}:second", Limit: limit, Name: "second"},
		{Key: "{a}:minute", Limit: ratelimit.PerMinute(5), Name: "minute"},
	})
	require.NoError(t, err)
	assert.True(t, mr.Allowed)
	assert.Equal(t, 2, peekRemaining(t, l, slotA, limit), "untouched by the refused call")
}
