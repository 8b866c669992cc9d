package observe_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
)

// printer is an Observer that prints each decision, without its duration.
type printer struct{}

func (printer) ObserveDecision(_ context.Context, d observe.Decision) {
	fmt.Printf("policy=%s backend=%s outcome=%s remaining=%d\n", d.Policy, d.Backend, d.Outcome, d.Remaining)
}

// Wrap reports each decision of a Limiter called directly: here three requests at once
// (Rate 1/s, Burst 2), then one with an empty key.
func ExampleWrap() {
	limiter := observe.Wrap(local.New(), printer{}, "api")
	defer limiter.Close()

	ctx := context.Background()
	for range 3 {
		limiter.Allow(ctx, "client", ratelimit.Limit{Rate: 1, Burst: 2})
	}
	_, err := limiter.Allow(ctx, "", ratelimit.Limit{Rate: 1, Burst: 2})
	fmt.Println(observe.Classify(ctx, err))
	// Output:
	// policy=api backend=local outcome=allowed remaining=1
	// policy=api backend=local outcome=allowed remaining=0
	// policy=api backend=local outcome=denied remaining=0
	// policy=api backend=local outcome=error remaining=0
	// invalid_input
}

// An observed limiter keeps the capabilities of the one it wraps: an observed local
// limiter still decides several limits at once, and reports each of them.
func ExampleWrap_allowAll() {
	limiter := observe.Wrap(local.New(), printer{}, "api")
	defer limiter.Close()

	multi, _ := ratelimit.As[ratelimit.MultiLimiter](limiter)
	res, _ := multi.AllowAll(context.Background(), []ratelimit.Request{
		{Key: "user:42", Limit: ratelimit.PerSecond(10), Name: "user"},
		{Key: "org:7", Limit: ratelimit.PerSecond(100)},
	})
	fmt.Println(res.Allowed)
	// Output:
	// policy=user backend=local outcome=allowed remaining=9
	// policy=api backend=local outcome=allowed remaining=99
	// true
}

// Classify tells a backend's failure from the caller's own deadline.
func ExampleClassify() {
	caller, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	fmt.Println(observe.Classify(caller, fmt.Errorf("redis: %w", context.DeadlineExceeded)))
	cancel()
	fmt.Println(observe.Classify(caller, fmt.Errorf("redis: %w", context.Canceled)))
	// Output:
	// timeout
	// canceled
}
