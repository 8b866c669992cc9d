package distributed_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/distributed"
)

// At most 200 requests in flight to the search backend, across every instance of the
// service; a request waits up to 100 ms for its turn.
func ExampleNew() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	limiter, err := distributed.New(client, distributed.WithTTL(5*time.Second))
	if err != nil {
		panic(err)
	}
	defer limiter.Close()

	search := func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		p, err := limiter.Acquire(ctx, "search", 200)
		switch {
		case errors.Is(err, concurrency.ErrQueueFull), errors.Is(err, context.DeadlineExceeded):
			return fmt.Errorf("busy, try later: %w", err)
		case err != nil:
			return err // Redis failed: the caller's error policy decides
		}
		defer p.Release()
		// … call the search backend …
		return nil
	}
	_ = search(context.Background())
}
