// Package bench compares the in-process backend of ratelimit with two other in-memory
// limiters and with the floor of what any such limiter does, and its Redis backend with
// another Redis limiter, under the same load, in one go test run. It is a module of its own, so the
// limiters it compares against never become dependencies of ratelimit.
//
// # Contenders
//
//   - ours: [github.com/sluice-go/ratelimit/local], built with its defaults.
//   - sethvargo: the memorystore of github.com/sethvargo/go-limiter. Its limit is set per
//     store, so each scenario builds a store with that scenario's limit.
//   - seed: the local limiter of the Genesis ratelimit component as our seed document
//     describes it (a sync.Map keyed by a formatted "key:rate:burst" string, one
//     golang.org/x/time/rate limiter per entry), reconstructed in seed.go for measurement
//     only.
//   - floor: the physical floor of an in-process limiter, in floor.go: one monotonic clock
//     read and GCRA on one atomic word by compare-and-swap, the word found by the address of
//     the key's bytes, no Result. Not a limiter anyone should use.
//
// # Scenarios
//
// BenchmarkAllow runs every contender on each combination of
//
//   - keys: hot (every call on one key) or 100k (calls walk 100,000 keys, whose buckets all
//     exist before the timer starts);
//   - traffic: allow (a limit the run cannot exhaust, so every call is allowed) or deny (each
//     bucket drained before the timer, and refilling too slowly to admit anything during the
//     run, so every call is denied);
//   - mode: serial (one goroutine) or parallel (b.RunParallel, each goroutine walking the keys
//     from its own starting point).
//
// Each benchmark checks its setup and fails if any timed call strayed from its path (an
// allow-mode call denied, or the reverse), so that a figure always measures what its name
// says. BenchmarkMemory reports the heap each contender holds per idle bucket, at 1,000,000
// buckets, as the custom metric B/bucket.
//
// BenchmarkRedis compares the Redis backend, [github.com/sluice-go/ratelimit/distributed],
// with github.com/go-redis/redis_rate/v10 and with a script that does nothing ("evalsha",
// the cost of a script round trip), on a redis-server it starts, at exactly 1, 8 and 64
// goroutines, reporting ops/s and p50/p99 latency as well as what each decision cost Redis.
// BenchmarkRedisFloor runs, beside ours and redis_rate, scripts that make the Redis calls a
// limiter needs and decide nothing, to show how close one script per decision can come to a
// bare EVALSHA. TestRedisOneRoundTripPerDecision checks that a decision of ours is one round
// trip.
//
// BenchmarkHeaderKey and BenchmarkHeaderKeyTurns compare the net/http middleware keyed by
// a header over 10,000 users with go-chi/httprate's and sethvargo/go-limiter's httplimit,
// in process; BenchmarkMiddleware measures each middleware beside its framework alone. The
// end-to-end comparison, through real servers, is package e2e (go run ./cmd/e2e).
//
// # Running
//
//	cd bench && go test -run '^$' -bench . -benchmem -count 1
//
// README.md says how the figures are turned into the ratios our performance targets are
// stated in.
package bench
