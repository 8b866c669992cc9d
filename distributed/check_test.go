package distributed_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// closedPort returns a loopback address on which nothing listens: a dial is refused.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// TestErrorNamesCause: a decision that fails at the limiter's deadline wraps
// ratelimit.ErrTimeout and names the network error the deadline hid, once, and no key; so
// does Check, at the caller's deadline. A Cluster client on a server that is not a Cluster
// node gets Redis's reply at once.
func TestErrorNamesCause(t *testing.T) {
	const user = "alice@example.com"
	t.Run("Refused", func(t *testing.T) {
		addr := closedPort(t)
		client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = client.Close() })
		l, err := distributed.New(client)
		require.NoError(t, err)

		_, err = l.Allow(context.Background(), user, ratelimit.PerSecond(10))
		require.ErrorIs(t, err, ratelimit.ErrTimeout)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.EqualError(t, err, "distributed: ratelimit: backend did not answer in time (context deadline exceeded); "+
			"last network error: dial tcp "+addr+": connect: connection refused")

		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		err = l.Check(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.EqualError(t, err, "distributed: Check: context deadline exceeded; "+
			"last network error: dial tcp "+addr+": connect: connection refused")
	})
	t.Run("NotClusterNode", func(t *testing.T) {
		server := redistest.NewServer(t)
		client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{server.Addr()}, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = client.Close() })
		l, err := distributed.New(client)
		require.NoError(t, err)

		_, err = l.Allow(context.Background(), user, ratelimit.PerSecond(10))
		require.EqualError(t, err, "distributed: ERR This instance has cluster support disabled")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.EqualError(t, l.Check(ctx), "distributed: Check: ERR This instance has cluster support disabled")
	})
	t.Run("Healthy", func(t *testing.T) {
		l, err := distributed.New(newClient(t, redistest.NewServer(t).Addr()))
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, l.Check(ctx))
		require.NoError(t, l.Close())
		require.ErrorIs(t, l.Check(ctx), ratelimit.ErrClosed)
	})
}

// TestClusterDeadAddress: a Cluster client one of whose seed addresses refuses connections
// loads its map of the slots on first use, dialing the seeds in a random order and retrying
// the dead one for hundreds of milliseconds whatever the context says. The limiter's first
// decision on each new client still returns within its deadline (50 ms, asserted with room
// for a loaded machine), failing with ratelimit.ErrTimeout if the map is not loaded by then;
// Check loads the map within the caller's deadline, after which decisions find it.
func TestClusterDeadAddress(t *testing.T) {
	cluster := redistest.NewCluster(t)
	seeds := append([]string{closedPort(t)}, cluster.Addrs()...)
	limit := ratelimit.PerSecond(10)
	for i := range 20 {
		client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = client.Close() })
		l, err := distributed.New(client, distributed.WithPrefix(uniquePrefix()))
		require.NoError(t, err)
		start := time.Now()
		_, err = l.Allow(context.Background(), "k", limit)
		took := time.Since(start)
		require.Less(t, took, 300*time.Millisecond, "client %d", i)
		if err != nil {
			require.ErrorIs(t, err, ratelimit.ErrTimeout, "client %d", i)
		}
	}

	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	l, err := distributed.New(client, distributed.WithPrefix(uniquePrefix()), distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, l.Check(ctx))
	res, err := l.Allow(ctx, "k", limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
}
