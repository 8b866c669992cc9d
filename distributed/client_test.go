package distributed_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// seamClient is a distributed.Client on a go-redis client through its plain script
// commands, so that the root module's tests go through the seam of NewWith too (the
// valkeyclient module runs them on valkey-go).
type seamClient struct {
	c       redis.UniversalClient
	sharded bool
}

func (s seamClient) Eval(ctx context.Context, sha, src string, keys []string, args []any, dst []int64) ([]int64, error) {
	cmd := s.c.EvalSha(ctx, sha, keys, args...)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = s.c.Eval(ctx, src, keys, args...)
	}
	v, err := cmd.Result()
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case int64:
		return append(dst, v), nil
	case []any:
		for _, e := range v {
			n, _ := e.(int64)
			dst = append(dst, n)
		}
	}
	return dst, nil
}

func (s seamClient) Load(ctx context.Context, src string) error {
	return s.c.ScriptLoad(ctx, src).Err()
}

func (s seamClient) Sharded() bool { return s.sharded }

// newWith returns a limiter built by NewWith on a seamClient of c.
func newWith(t testing.TB, c redis.UniversalClient, sharded bool, clock *ratelimittest.Clock, opts ...distributed.Option) *distributed.Limiter {
	l, err := distributed.NewWith(seamClient{c, sharded}, append([]distributed.Option{
		distributed.WithPrefix(uniquePrefix()), distributed.WithClock(clock.Now)}, opts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func TestNewWithNil(t *testing.T) {
	_, err := distributed.NewWith(nil)
	require.EqualError(t, err, "distributed: NewWith: nil client")
	var c *seamPtr
	_, err = distributed.NewWith(c)
	require.EqualError(t, err, "distributed: NewWith: nil client")
}

// seamPtr is a Client whose nil pointer NewWith must refuse.
type seamPtr struct{ seamClient }

// TestConformanceNewWith runs every rule of the contract through the seam, on one node and
// on a Cluster (where AllowAll groups its keys by the Client's Sharded).
func TestConformanceNewWith(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		client  func(t *testing.T) redis.UniversalClient
		sharded bool
	}{
		{"node", func(t *testing.T) redis.UniversalClient { return newClient(t, redistest.NewServer(t).Addr()) }, false},
		{"cluster", func(t *testing.T) redis.UniversalClient {
			c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.NewCluster(t).Addrs(), ContextTimeoutEnabled: true})
			t.Cleanup(func() { _ = c.Close() })
			return c
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := tc.client(t)
			h := redisHarness(nil, noOptions)
			h.New = func(t testing.TB, cfg ratelimittest.Config) ratelimit.Limiter {
				return newWith(t, c, tc.sharded, cfg.Clock, distributed.WithAlgorithm(cfg.Algorithm),
					distributed.WithReserves(cfg.Reserves), distributed.WithTimeout(10*time.Second))
			}
			ratelimittest.Run(t, h)
		})
	}
}
