package rls

import (
	"context"
	"fmt"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
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

// TestAllOrNothingAcrossSlots decides on a Redis Cluster without the domain's hash tag, so
// that a request's buckets fall in different slots: the request [user a, org x] whose org
// is spent is denied and charges a's bucket nothing (CrossSlotGroups gives back what a slot
// took). That the two buckets are in two slots is shown first: a limiter that refuses
// cross-slot requests fails the same request.
func TestAllOrNothingAcrossSlots(t *testing.T) {
	cluster := redistest.NewCluster(t)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = client.Close() })
	service := func(prefix string, opts ...distributed.Option) *Service {
		l, err := distributed.New(client, append(opts, distributed.WithPrefix(prefix),
			distributed.WithTimeout(5*time.Second))...)
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		s, err := New(l, load(t, apiConfig), WithoutHashTag(), WithoutHeaders(), WithFailureMode(FailError))
		require.NoError(t, err)
		return s
	}
	both := rq("api", 0, desc("user", "a"), desc("org", "x"))
	ctx := context.Background()

	refusing := service("refuse:", distributed.WithCrossSlot(distributed.CrossSlotRefuse))
	_, err := refusing.ShouldRateLimit(ctx, both)
	require.Error(t, err, "the two buckets are in one slot: the test proves nothing")

	s := service("refund:")
	for range 10 { // org: 10 an hour
		r, err := s.ShouldRateLimit(ctx, rq("api", 0, desc("org", "x")))
		require.NoError(t, err)
		require.Equal(t, ok, r.GetOverallCode())
	}
	r, err := s.ShouldRateLimit(ctx, both)
	require.NoError(t, err)
	assert.Equal(t, over, r.GetOverallCode())
	assert.Equal(t, []pb.RateLimitResponse_Code{ok, over},
		[]pb.RateLimitResponse_Code{r.GetStatuses()[0].GetCode(), r.GetStatuses()[1].GetCode()})
	assert.EqualValues(t, 20, r.GetStatuses()[0].GetLimitRemaining(), "a's bucket was not charged")
	r, err = s.ShouldRateLimit(ctx, rq("api", 0, desc("user", "a")))
	require.NoError(t, err)
	assert.EqualValues(t, 19, r.GetStatuses()[0].GetLimitRemaining(), "a's first charge")
}
