// Package faults holds the fault-injection tests of ratelimit: Redis stopped and brought
// back under load through the Gin middleware and the gRPC interceptors, and Redis slowed
// by a loopback TCP proxy (Shopify's toxiproxy, run in-process), against a fallback
// Limiter. It has no code of its own.
//
// It is a module of its own, so that toxiproxy and what it brings (Prometheus, zerolog)
// never become dependencies of ratelimit; it uses the ratelimit of this repository through
// a replace directive. Run it with
//
//	cd faults && go test -race -count=1 ./...
//
// (make test does). Every test listens and dials on 127.0.0.1 only, starts its own
// redis-server, and ends by itself within a few seconds.
package faults
