// Package concurrency limits how many callers of a key run at once: "at most 3 report
// exports per tenant", "at most 200 requests in flight to the search backend". A rate limit
// counts starts per unit of time; a concurrency limit counts what has started and not yet
// finished, so a slow backend lowers the throughput it admits instead of piling up work.
//
// Limiter is the contract: Acquire waits for a Permit as the queue allows, TryAcquire never
// waits, and Permit.Release frees the permit (once, from any goroutine). Its errors are told
// apart with errors.Is, as the rate limiters' are: ErrQueueFull is a refusal for lack of
// capacity, ratelimit.ErrTimeout and other backend errors a failure of the limiter, and an
// error wrapping the caller's ctx.Err() says only that the caller gave up.
//
// This package is the contract alone, with what every backend shares: Permit, Outcome,
// Stats, and AIMD, an adaptive limit kept apart from the limiters that count permits.
// Package [github.com/sluice-go/ratelimit/concurrency/local] counts permits in this process
// (the one that takes an AIMD today), package
// [github.com/sluice-go/ratelimit/concurrency/distributed] keeps them in Redis, so that the
// limit holds across every instance of a service, and package
// [github.com/sluice-go/ratelimit/concurrency/fallback] keeps a share of it in force with a
// local limiter while Redis is away. Stats aggregates a limiter's keys for metrics
// (otelmetrics.WithConcurrency, prommetrics.WithConcurrency), never per key.
//
// The guide, https://github.com/sluice-go/ratelimit/blob/main/docs/concurrency.md,
// compares rate and concurrency limits, the queue orders, what a crash costs and how the
// adaptive limit fails.
package concurrency
