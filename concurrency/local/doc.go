// Package local is the in-process backend of package concurrency: permits counted in this
// process, with a bounded queue per key (WithQueue, oldest or newest first), a bounded
// number of keys (WithMaxKeys) and, optionally, a limit per key that adapts to the latency
// and the drops the protected work reports (WithAdaptive, concurrency.AIMD). An uncontended
// Acquire and Release allocate nothing. Use it for one instance, or as the share a fallback
// keeps in force while Redis is away (package
// [github.com/sluice-go/ratelimit/concurrency/fallback]).
//
// Options follow the kit's rule: zero means the default, a negative value turns off what
// can be turned off (the queue), and a nil Option is skipped.
package local
