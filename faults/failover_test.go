package faults

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// clusterNodeTimeout is the cluster-node-timeout of TestClusterFailover: how long the
// killed master goes unheard before the others count it as failed and its replica takes
// over, as short as a loaded two-core machine allows without false alarms.
const clusterNodeTimeout = time.Second

// clusterReload is the ClusterStateReloadInterval of the Cluster client of
// TestClusterFailover. go-redis (v9.23) reloads its map of the slots on a MOVED or ASK reply,
// or when the map is older than that interval, 60 s by default, and never on a failure to
// reach the node it routes to: a master that died sends no MOVED, so the client goes on
// routing its slots to it until the interval has passed. See TestClusterFailover's control.
const clusterReload = time.Second

// TestClusterFailover: a master of a Redis Cluster of three masters and three replicas is
// killed (SIGKILL) in the middle of a load test through the Gin middleware, with a fallback
// Limiter over the Redis backend on a go-redis Cluster client; its replica is promoted. See
// faultRun.report for what is checked. It also reads back, from the promoted replica, the
// charges of the counter keys of the killed master's slots, against those the primary
// acknowledged: what the failover forgot (replication is asynchronous). Redis decides again
// within clusterReload and a second of the promotion (less stalls).
func TestClusterFailover(t *testing.T) {
	noLeaks(t)
	cluster := redistest.NewCluster(t, redistest.WithReplicas(1), redistest.WithNodeTimeout(clusterNodeTimeout))
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cluster.Addrs(), ContextTimeoutEnabled: true, ClusterStateReloadInterval: clusterReload,
	})
	t.Cleanup(func() { _ = client.Close() })
	s := newStack(t, client, true, fallback.WithInstances(2))
	k := newKeys(12, 12)

	victim := cluster.MasterOf(t, k.names[0])
	onVictim := make(map[string]bool)
	moved := map[bool]int{}
	for i, name := range k.names {
		onVictim[name] = cluster.MasterOf(t, name) == victim
		if onVictim[name] {
			moved[k.limited(i)]++
		}
	}
	require.GreaterOrEqual(t, moved[true], 2, "limited keys on the master to kill")
	require.GreaterOrEqual(t, moved[false], 2, "counter keys on the master to kill")

	// A client with go-redis's default ClusterStateReloadInterval, which knows the slots
	// from before the failover and would keep them for a minute, but for the limiter: see
	// below.
	control := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = control.Close() })
	// a loaded machine's first call
	controlLimiter, err := distributed.New(control, distributed.WithTimeout(time.Second))
	require.NoError(t, err)
	controlKey := limiterKey(k.names[0]) + ":control" // on the slot of k.names[0]
	_, err = controlLimiter.Allow(context.Background(), controlKey, keyedLimit)
	require.NoError(t, err)

	r := runFault(t, s, newService(t, s), k, fault{
		inject:   victim.Kill,
		heal:     func() { cluster.AwaitFailover(t, recoveryLimit) },
		affected: func(name string) bool { return onVictim[name] },
		opens:    true,
	})
	r.report(t)
	logCharges(t, r, client)
	lost := r.stalled.within(r.healed, r.recovered)
	require.LessOrEqual(t, r.recovered.Sub(r.healed)-lost, clusterReload+time.Second,
		"Redis deciding again after the replica's promotion: the client's reload interval and a second")

	// After the promotion, that client still sends the slot's commands to the dead master;
	// its first failure makes the limiter ask it to reload its slots, and it finds the
	// promoted replica long before its own minute is up.
	_, err = controlLimiter.Allow(context.Background(), controlKey, keyedLimit)
	t.Logf("a client with the default ClusterStateReloadInterval, %v after the promotion: %v", time.Since(r.healed).Round(time.Millisecond), err)
	deadline := time.Now().Add(15 * time.Second)
	for err != nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polls the client's background reload
		_, err = controlLimiter.Allow(context.Background(), controlKey, keyedLimit)
	}
	require.NoError(t, err, "the limiter made a client with the default reload interval find the promoted replica")
	t.Logf("it decides again %v after the promotion", time.Since(r.healed).Round(time.Millisecond))
}

// TestSentinelFailover: the master of a Redis watched by three sentinels is killed
// (SIGKILL) in the middle of a load test through the Gin middleware, with a fallback
// Limiter over the Redis backend on go-redis's failover client; the sentinels promote the
// replica, and the client follows. Checked and measured as TestClusterFailover, every key
// being affected; Redis decides again within sentinelRecovery of the master's death.
func TestSentinelFailover(t *testing.T) {
	noLeaks(t)
	sentinel := redistest.NewSentinel(t)
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:            redistest.SentinelMasterName,
		SentinelAddrs:         sentinel.SentinelAddrs(),
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = client.Close() })
	s := newStack(t, client, true, fallback.WithInstances(2))
	master := sentinel.Master(t)

	r := runFault(t, s, newService(t, s), newKeys(12, 12), fault{
		inject: master.Kill,
		heal:   func() { sentinel.AwaitFailover(t, master, recoveryLimit) },
		opens:  true,
	})
	r.report(t)
	logCharges(t, r, client)
	lost := r.stalled.within(r.injected, r.recovered)
	require.LessOrEqual(t, r.recovered.Sub(r.injected)-lost, sentinelRecovery, "Redis deciding again after the master was killed")
}

// sentinelRecovery bounds the time from the master's death to Redis deciding again in
// TestSentinelFailover, not counting stalls: the sentinels' down-after-milliseconds, their
// agreement (they ask each other once a second), their election (which may need a second
// round, two failover-timeouts later), the promotion, and the client's following.
const sentinelRecovery = 10 * time.Second

// logCharges logs what Redis kept of the charges of the affected counter keys.
func logCharges(t *testing.T, r *faultRun, client redis.Scripter) {
	t.Helper()
	c := r.charges(t, client, true)
	t.Logf("counter keys affected: %d charges acknowledged, %d held by Redis after the failover, %d calls failed; forgotten: at least %d",
		c.acked, c.stored, c.failed, c.forgotten)
}
