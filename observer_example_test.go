package ratelimit_test

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
)

// printer is an Observer that prints each decision, without its duration.
type printer struct{}

func (printer) ObserveDecision(_ context.Context, d ratelimit.Decision) {
	fmt.Printf("policy=%s backend=%s outcome=%s remaining=%d\n", d.Policy, d.Backend, d.Outcome, d.Remaining)
}

// Observe reports each decision of a Limiter called directly: here the seed timeline's
// first three requests (Rate 1/s, Burst 2), then one with an empty key.
func ExampleObserve() {
	limiter := ratelimit.Observe(local.New(), printer{}, "api")
	defer limiter.Close()

	ctx := context.Background()
	for range 3 {
		limiter.Allow(ctx, "client", ratelimit.Limit{Rate: 1, Burst: 2})
	}
	_, err := limiter.Allow(ctx, "", ratelimit.Limit{Rate: 1, Burst: 2})
	fmt.Println(ratelimit.ClassifyError(ctx, err))
	// Output:
	// policy=api backend=local outcome=allowed remaining=1
	// policy=api backend=local outcome=allowed remaining=0
	// policy=api backend=local outcome=denied remaining=0
	// policy=api backend=local outcome=error remaining=0
	// invalid_input
}

// ClassifyError tells a backend's failure from the caller's own deadline.
func ExampleClassifyError() {
	caller, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	fmt.Println(ratelimit.ClassifyError(caller, fmt.Errorf("redis: %w", context.DeadlineExceeded)))
	cancel()
	fmt.Println(ratelimit.ClassifyError(caller, fmt.Errorf("redis: %w", context.Canceled)))
	// Output:
	// timeout
	// canceled
}
