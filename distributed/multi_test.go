package distributed_test

import (
	"testing"

	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestConformanceClusterSameSlot runs the suite on a 3-node Cluster with a prefix that
// carries a hash tag, so that every key of a limiter lives in one slot: each AllowAll is one
// script. (TestConformanceCluster decides the keys of an AllowAll slot by slot, with refunds.)
func TestConformanceClusterSameSlot(t *testing.T) {
	t.Parallel()
	client := newClusterClientOf(t, redistest.NewCluster(t))
	ratelimittest.Run(t, redisHarness(client, func() []distributed.Option {
		return []distributed.Option{distributed.WithPrefix("{" + uniquePrefix() + "}:")}
	}))
}
