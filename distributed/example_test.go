package distributed_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/priority"
)

// A limiter on a redis.UniversalClient: one address makes a single-node client, several a
// Cluster client, and a MasterName a Sentinel (failover) client. ContextTimeoutEnabled lets
// the limiter's deadline cut a stalled read short.
func ExampleNew() {
	client := redis.NewUniversalClient(&redis.UniversalOptions{
		Addrs:                 []string{"127.0.0.1:6379"},
		ContextTimeoutEnabled: true,
	})
	defer client.Close()

	limiter, err := distributed.New(client) // does not contact Redis
	if err != nil {
		log.Fatal(err)
	}
	defer limiter.Close() // leaves the client open

	res, err := limiter.Allow(context.Background(), "user:42", ratelimit.PerMinute(100))
	switch {
	case err != nil:
		log.Printf("no decision (Redis down?): %v", err)
	case !res.Allowed:
		fmt.Printf("limited; retry in %v\n", res.RetryAfter)
	default:
		fmt.Printf("allowed; %d left\n", res.Remaining)
	}
}

// Priority reserves: a request carries its priority in its context, and the limiter keeps
// part of each bucket back from the lower ones. Here Sheddable requests may take a bucket of
// 100 down to 70 tokens, Normal ones down to 10 (the default), Critical ones to empty.
func ExampleWithReserves() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	limiter, err := distributed.New(client, distributed.WithReserves(priority.Reserves{Sheddable: 0.3}))
	if err != nil {
		log.Fatal(err) // reserves that Reserves.Validate refuses
	}
	defer limiter.Close()

	ctx := priority.With(context.Background(), priority.Sheddable)
	res, err := limiter.Allow(ctx, "tenant:7", ratelimit.PerMinute(100))
	switch {
	case err != nil:
		log.Printf("no decision (Redis down?): %v", err)
	case !res.Allowed:
		fmt.Printf("shed; retry in %v\n", res.RetryAfter) // when a sheddable request passes again
	default:
		fmt.Printf("allowed; %d left to sheddable requests\n", res.Remaining)
	}
}

// Workers in several processes draining one queue at 100 jobs a second: each books its
// job's slot on the Redis clock, within the second it is willing to wait, and sleeps until
// it. Wait does the same for one token (and fails at once when the slot is past its
// context's deadline).
func ExampleLimiter_Reserve() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	limiter, err := distributed.New(client)
	if err != nil {
		log.Fatal(err)
	}
	defer limiter.Close()
	res, err := limiter.Reserve(context.Background(), "jobs", ratelimit.PerSecond(100), 1, time.Second)
	switch {
	case err != nil:
		log.Printf("no decision: %v", err)
	case !res.Allowed:
		fmt.Printf("no slot within a second; the next is %v away\n", res.RetryAfter)
	default:
		time.Sleep(res.Delay) // then run the job; or Refund the booking to give it up
	}
}
