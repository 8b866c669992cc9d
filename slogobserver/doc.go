// Package slogobserver logs rate-limiting decisions through log/slog: an observe.Observer
// for services that want to read, not only count, what their limiter does. It uses the
// standard library only.
//
//	obs := slogobserver.New(logger)
//	limiter := observe.Wrap(local.New(), obs, "api") // or a middleware's WithObserver(obs)
//
// with fallback.WithStateHook(obs.ObserveBreaker) for the breaker; ExampleNew runs it.
//
// Denials are logged at one level (Info by default), errors at another (Warn), each kind
// at most a bounded number of times per interval (10 a minute by default), so that a flood
// of denials cannot flood the logs: the records dropped are counted, and the next record
// written says how many (dropped=N). Counting every decision is the job of a metrics
// observer (otelmetrics, prommetrics); the records are examples, with the policy, backend,
// cost, priority, limit and the limiter's error. They never hold the key. Package lease's
// grants are not requests: only a failed call for a chunk is logged. Changes of a circuit
// breaker's state are always logged: Warn when decisions degrade, Info when they recover.
//
// The package is named for what it uses and what it is, like otelmetrics and prommetrics
// beside it: slogobserver.New returns the Observer to give to WithObserver.
package slogobserver
