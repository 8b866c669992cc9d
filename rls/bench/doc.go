// Package rlsbench measures ratelimit-server (rls/cmd/ratelimit-server) beside the
// reference rate-limit service, envoyproxy/ratelimit at ReferenceVersion, both built from
// the module proxy into separate processes on one Redis: BenchmarkRLS measures each on the
// same workloads in interleaved rounds (-rounds), BenchmarkDifferential sends
// both the same request stream and compares their answers. It is a module of its own, so
// that no other module's build depends on the benchmark's, and its benchmarks run only
// when asked (make bench-rls): building the reference takes minutes the first time.
//
// Each server runs on CPU 1 and Redis and the load on CPU 0 (taskset), so that the server
// CPU measured per call is the server's alone.
package rlsbench

// ReferenceVersion is the version of github.com/envoyproxy/ratelimit the benchmarks build
// (its src/service_cmd) and measure ours beside.
const ReferenceVersion = "v1.4.1-0.20260122083618-3fb702589d36"
