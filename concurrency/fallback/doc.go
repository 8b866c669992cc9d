// Package fallback keeps concurrency limits in force while the shared limiter behind them
// (Redis, package [github.com/sluice-go/ratelimit/concurrency/distributed]) is slow or
// down. It composes two concurrency.Limiters: a primary, asked while it answers, and a
// secondary (typically a concurrency/local Limiter) that grants this instance's share of each max
// while it does not.
//
//	primary, _ := distributed.New(client, distributed.WithOnFailure(distributed.ReturnError))
//	limiter := fallback.New(primary, local.New(), fallback.WithInstances(4))
//
// ExampleWithInstances runs one through an outage.
//
// It is the concurrency counterpart of package [github.com/sluice-go/ratelimit/fallback],
// and shares its circuit breaker, its states and its hooks.
//
// # Circuit breaker
//
// After WithFailureThreshold failures of the primary in a row (5 by default) the breaker
// opens: for WithCooldown (250 ms by default) the primary is not called and every permit
// comes from the secondary. Then one call, the probe, goes to the primary; its success
// closes the breaker, its failure opens it for another cooldown.
//
// Only failures of the primary count: its own deadline (ratelimit.ErrTimeout) and its
// errors talking to Redis. concurrency.ErrQueueFull is a refusal for lack of capacity, an
// answer; so are ratelimit.ErrClosed, errors about the arguments, and any error of a call
// whose own context has ended: clients giving up early cannot open the breaker for
// everyone. Answers are returned as they are.
//
// # Degrading to the secondary
//
// When the primary fails, or the breaker keeps calls off it, the secondary grants the
// permit under this instance's share of max (WithInstances(n): max/n, rounded down, at
// least 1), so that n instances together admit about max instead of n times it. The
// permits held in Redis when it went away are not counted by the secondary: during the
// lease TTL after an outage begins, an instance may run its old holders beside its share.
//
// Each permit is released to the limiter that granted it, whatever the breaker says by
// then: a permit granted by Redis before an outage is released to Redis (or ends with its
// lease), one granted by the secondary during it is released to the secondary after
// recovery. A caller waiting in the secondary's queue when Redis comes back stays there
// until it is served or its context ends.
//
// With a nil secondary, the calls the primary cannot decide fail with an error wrapping
// ErrUnavailable, and the caller's error policy applies.
//
// # Hooks
//
// WithErrorHandler is told of each failure of the primary, WithStateHook of each change of
// the breaker's state; StateChange.Edge picks out the start and end of an outage. The
// observers of otelmetrics, prommetrics and slogobserver count or log the changes through
// their ObserveBreaker methods, as for the rate limits' fallback.
//
// Close makes later calls fail with ratelimit.ErrClosed; it closes neither limiter, which
// belong to the caller. The Limiter starts no goroutine.
package fallback
