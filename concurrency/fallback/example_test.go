package fallback_test

import (
	"context"
	"fmt"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/fallback"
	"github.com/sluice-go/ratelimit/concurrency/local"
)

// down is a primary that cannot reach its Redis.
type down struct{ concurrency.Limiter }

func (down) Acquire(context.Context, string, int) (concurrency.Permit, error) {
	return concurrency.Permit{}, errDown
}

func (down) TryAcquire(context.Context, string, int) (concurrency.Permit, bool, error) {
	return concurrency.Permit{}, false, errDown
}

// While the primary is down, this instance, one of 4, holds at most 10/4 = 2 permits of
// each key. The second failure in a row opens the breaker: the outage's first edge.
func ExampleWithInstances() {
	secondary := local.New()
	defer secondary.Close()
	limiter := fallback.New(down{}, secondary, fallback.WithInstances(4), fallback.WithFailureThreshold(2),
		fallback.WithStateHook(func(c fallback.StateChange) {
			if c.Edge() {
				fmt.Println(c)
			}
		}))
	ctx := context.Background()
	for range 3 {
		p, ok, err := limiter.TryAcquire(ctx, "exports:tenant-42", 10)
		fmt.Println(ok, err)
		defer p.Release()
	}
	// Output:
	// true <nil>
	// circuit breaker closed → open (degraded): distributed: connection refused
	// true <nil>
	// false <nil>
}
