package rls

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }

// TestScenariosRedis plays the conformance scenarios through a real gRPC server on a real
// Redis node and a 3-node Redis Cluster. Redis counts windows on its own clock, which the
// test cannot move, so the scenarios that move the clock past a window are left to the
// in-memory backend; and a scenario that happened to straddle the end of a minute on the
// Redis clock is played once more, on fresh buckets (it cannot straddle two).
func TestScenariosRedis(t *testing.T) {
	node := redistest.NewServer(t)
	cluster := redistest.NewCluster(t)
	clients := map[string]redis.UniversalClient{
		"node":    redis.NewClient(&redis.Options{Addr: node.Addr(), ContextTimeoutEnabled: true}),
		"cluster": redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true}),
	}
	for name, client := range clients {
		t.Cleanup(func() { _ = client.Close() })
		t.Run(name, func(t *testing.T) {
			for i, sc := range scenarios() {
				if sc.localOnly {
					continue
				}
				t.Run(sc.name, func(t *testing.T) {
					var diffs []string
					for try := range 2 {
						before := redisMinute(t, client)
						diffs = playRedis(t, client, fmt.Sprintf("t%d.%d:", i, try), sc)
						if len(diffs) == 0 || redisMinute(t, client) == before {
							break
						}
					}
					for _, d := range diffs {
						t.Error(d)
					}
				})
			}
		})
	}
}

func playRedis(t *testing.T, client redis.UniversalClient, prefix string, sc scenario) []string {
	l, err := distributed.New(client, distributed.WithPrefix(prefix), distributed.WithTimeout(5*time.Second),
		// Refused across slots: the hash tag must keep a request in one slot, decided atomically.
		distributed.WithCrossSlot(distributed.CrossSlotRefuse))
	require.NoError(t, err)
	defer l.Close()
	clock := newClock()
	s, err := New(l, load(t, sc.config), append([]Option{WithClock(clock.Now), WithoutHeaders()}, sc.opts...)...)
	require.NoError(t, err)
	return sc.run(context.Background(), s, clock, serveGRPC(t, s))
}

// redisMinute returns the minute of the Redis clock since the Unix epoch.
func redisMinute(t *testing.T, client redis.UniversalClient) int64 {
	now, err := client.Time(context.Background()).Result()
	require.NoError(t, err)
	return now.Unix() / 60
}
