package local_test

import (
	"context"
	"fmt"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
)

// Two limits on one login route, decided all or nothing: 2 a second and 5 a minute per
// client. Ten attempts at once: two pass, and the eight denials take nothing from the
// per-minute bucket, which still holds 3.
func ExampleLimiter_AllowAll() {
	limiter := local.New()
	defer limiter.Close()
	ctx := context.Background()
	reqs := []ratelimit.Request{
		{Key: "login:203.0.113.7", Limit: ratelimit.PerSecond(2), Name: "second"},
		{Key: "login:203.0.113.7", Limit: ratelimit.PerMinute(5), Name: "minute"},
	}
	allowed := 0
	for range 10 {
		mr, err := limiter.AllowAll(ctx, reqs)
		if err != nil {
			panic(err)
		}
		if mr.Allowed {
			allowed++
		}
	}
	res, _ := limiter.Peek(ctx, "login:203.0.113.7", ratelimit.PerMinute(5), 1)
	fmt.Println("allowed:", allowed)
	fmt.Println("left in the minute:", res.Remaining+1)
	// Output:
	// allowed: 2
	// left in the minute: 3
}

// Counting only failed logins: every attempt takes a token, and a successful one gets it
// back.
func ExampleLimiter_Refund() {
	limiter := local.New()
	defer limiter.Close()
	ctx := context.Background()
	limit := ratelimit.PerHour(3)
	for _, ok := range []bool{true, true, true, true, false} {
		res, err := limiter.Allow(ctx, "login:alice", limit)
		if err != nil {
			panic(err)
		}
		if ok && res.Allowed {
			// res.Charge: the refund goes back to where the attempt took its token.
			if _, err := limiter.Refund(ctx, "login:alice", limit, 1, res.Charge); err != nil {
				panic(err)
			}
		}
	}
	res, _ := limiter.Peek(ctx, "login:alice", limit, 1)
	fmt.Println("failed logins left:", res.Remaining+1)
	// Output:
	// failed logins left: 2
}
