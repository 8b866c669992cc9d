// Package faults holds the fault-injection tests of ratelimit, against a fallback Limiter
// over the Redis backend, under load through the Gin middleware and the gRPC interceptors:
//
//   - Redis stopped and brought back (TestGinRedisStopped, TestGRPCRedisStopped,
//     TestGinSaturatedPool), and restarted empty (TestRedisRestartedEmpty);
//   - Redis slowed (TestSlowRedis, TestUnsafeReadTimeout), and the network to it cut
//     without a connection closed (TestPartition), by a loopback TCP proxy (Shopify's
//     toxiproxy, run in-process);
//   - a master killed and its replica promoted, in a Redis Cluster of three masters and
//     three replicas (TestClusterFailover) and under Redis Sentinel (TestSentinelFailover).
//
// It has no code of its own.
// https://github.com/sluice-go/ratelimit/blob/main/docs/redis.md#failure-modes lists the
// bound each test asserts.
//
// It is a module of its own, so that toxiproxy and what it brings (Prometheus, zerolog)
// never become dependencies of ratelimit; it uses the ratelimit of this repository through
// a replace directive. Run it with
//
//	cd faults && go test -race -count=1 ./...
//
// (make test does). Every test listens and dials on 127.0.0.1 only, starts its own Redis
// processes (internal/redistest), stops them in its cleanups, and ends by itself within
// seconds: the module's tests take about 40 s on two cores.
package faults
