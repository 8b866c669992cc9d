package distributed_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/conformance"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// priorityHarness returns the harness of conformance.RunPriority for algorithm alg on
// client: a limiter with the default reserves, and limiters with others on the same clock.
func priorityHarness(client redis.Scripter, alg ratelimit.Algorithm) func(t *testing.T) conformance.Harness {
	return func(t *testing.T) conformance.Harness {
		clock := conformance.NewClock()
		return conformance.Harness{
			Limiter:   newLimiter(t, client, clock, distributed.WithAlgorithm(alg)),
			Advance:   clock.Advance,
			CanWait:   alg == ratelimit.LeakyBucket,
			Algorithm: alg,
			Reserves: func(r ratelimit.Reserves) ratelimit.Limiter {
				return newLimiter(t, client, clock, distributed.WithAlgorithm(alg), distributed.WithReserves(r))
			},
		}
	}
}

func TestPriorityConformance(t *testing.T) {
	client := newClient(t, redistest.NewServer(t).Addr())
	for _, alg := range conformance.Algorithms() {
		t.Run(alg.String(), func(t *testing.T) {
			conformance.RunPriority(t, alg, priorityHarness(client, alg))
		})
	}
}
