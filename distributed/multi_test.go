package distributed_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/conformance"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// runMulti runs the rules of AllowAll, Peek, Refund and Reset on client for every algorithm,
// each limiter built with opts after the test ones.
func runMulti(t *testing.T, client redis.Scripter, opts func() []distributed.Option) {
	for _, alg := range conformance.Algorithms() {
		harness := func(t *testing.T) conformance.Harness {
			return redisHarness(client, alg, opts()...)(t) // opts afresh: a prefix of its own
		}
		t.Run(alg.String(), func(t *testing.T) {
			conformance.RunMulti(t, alg, harness)
			conformance.RunInspector(t, alg, harness)
		})
	}
}

func TestMultiConformance(t *testing.T) {
	server := redistest.NewServer(t)
	runMulti(t, newClient(t, server.Addr()), func() []distributed.Option { return nil })
}

// TestMultiConformanceClusterSameSlot runs the rules on a 3-node Cluster with a prefix that
// carries a hash tag, so that every key of a limiter lives in one slot: each AllowAll is one
// script.
func TestMultiConformanceClusterSameSlot(t *testing.T) {
	client := newClusterClientOf(t, redistest.NewCluster(t))
	runMulti(t, client, func() []distributed.Option {
		return []distributed.Option{distributed.WithPrefix("{" + uniquePrefix() + "}:")}
	})
}

// TestMultiConformanceClusterCrossSlot runs the rules on a 3-node Cluster with keys in
// different slots, decided slot by slot with refunds.
func TestMultiConformanceClusterCrossSlot(t *testing.T) {
	client := newClusterClientOf(t, redistest.NewCluster(t))
	runMulti(t, client, func() []distributed.Option { return nil })
}

// TestInterleavings plays random mixes of AllowN, AllowAll, Peek, Refund and Reset against
// the reference models (see conformance.CheckInterleavings), for every algorithm, on one
// Redis server.
func TestInterleavings(t *testing.T) {
	client := newClient(t, redistest.NewServer(t).Addr())
	for _, alg := range conformance.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			for seed := range uint64(3) {
				conformance.CheckInterleavings(t, redisHarness(client, alg), seed, 300)
			}
		})
	}
}
