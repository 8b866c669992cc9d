// Package observe reports the decisions of limiters: an Observer is told of each, as a
// Decision (policy, backend, outcome, error kind, shadow, cost, priority, remaining, limit
// and duration, never the key).
//
// The middlewares take an Observer (WithObserver); Wrap reports the decisions of a
// ratelimit.Limiter called directly; Join composes several observers and recovers their
// panics. Report and ReportAll build a Decision from a limiter's answer, the one way every
// reporter of this module does, for code that reports decisions of its own; a Stopwatch
// times them, only one in n for a DurationSampler (an observer that needs no more, such
// as otelmetrics'), saving two readings of the clock on the others. Classify sorts a
// limiter's errors by what an operator does about them. A limiter made of several
// (fallback) says which of them decided through OriginReporter.
//
// Packages otelmetrics (OpenTelemetry), prommetrics (Prometheus, a module of its own) and
// slogobserver (log/slog) implement Observer;
// https://github.com/sluice-go/ratelimit/blob/main/docs/observability.md has the instruments,
// queries and alerts. Changes of fallback's circuit breaker are reported by
// fallback.WithStateHook, whose function each of them offers as ObserveBreaker.
//
// This package imports only the standard library and package ratelimit.
package observe
