package local_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/local"
)

// At most 3 report exports per tenant at a time; a fourth waits for its turn, and a caller
// that finds 10 already waiting is turned away.
func ExampleNew() {
	limiter := local.New(local.WithQueue(10, local.OldestFirst))
	defer limiter.Close()
	ctx := context.Background()

	var exports []concurrency.Permit
	for range 3 {
		p, err := limiter.Acquire(ctx, "tenant:42", 3)
		if err != nil {
			panic(err)
		}
		exports = append(exports, p)
	}
	_, ok, _ := limiter.TryAcquire(ctx, "tenant:42", 3)
	fmt.Println("fourth export now:", ok)

	exports[0].Release()
	p, ok, _ := limiter.TryAcquire(ctx, "tenant:42", 3)
	fmt.Println("after one finished:", ok)
	p.Release()
	// Output:
	// fourth export now: false
	// after one finished: true
}

// The limit finds itself: it falls when the protected call fails for lack of capacity and
// rises while it succeeds with the limit in use.
func ExampleWithAdaptive() {
	limiter := local.New(local.WithAdaptive(concurrency.AIMD{Initial: 20}))
	defer limiter.Close()
	ctx := context.Background()

	var held []concurrency.Permit
	for range 10 {
		p, _ := limiter.Acquire(ctx, "db", 100)
		held = append(held, p)
	}
	errOverloaded := errors.New("overloaded")
	for _, p := range held {
		if err := errOverloaded; err != nil { // the call failed: the database is overloaded
			p.ReleaseWith(concurrency.Dropped)
			continue
		}
		p.Release()
	}
	limit, _ := limiter.Limit("db")
	fmt.Println(limit) // ⌊20 · 0.9⌋: one decrease for the permits granted under one limit
	// Output: 18
}
