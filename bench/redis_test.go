package bench

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// redisPoolSize is the connection pool of the client every Redis contender shares: one
// connection for each goroutine of the busiest scenario, so that no goroutine ever waits for
// a connection (go-redis's default, 10 per GOMAXPROCS, would be 20 here).
const redisPoolSize = 64

// redisGoroutines are the numbers of goroutines BenchmarkRedis runs each scenario with.
var redisGoroutines = []int{1, 8, 64}

// newRedisClient returns the client settings every contender runs on. ContextTimeoutEnabled
// lets the deadline of ours (distributed.WithTimeout) bound the network wait itself, which is
// how distributed's documentation asks for clients to be built.
func newRedisClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: redisPoolSize})
}

// redisTraffic is one kind of load on the limiters: every timed call allowed, or every timed
// call denied, with the same limit expressed for each.
type redisTraffic struct {
	name string
	// whether every timed call must be allowed (else every one must be denied)
	allow bool
	tb    ratelimit.Limit // ours with the token bucket or the leaky bucket
	other ratelimit.Limit // ours with a window algorithm
	peer  redis_rate.Limit
}

// ours returns the limit of ours with algorithm a.
func (tr redisTraffic) ours(a ratelimit.Algorithm) ratelimit.Limit {
	if a == ratelimit.TokenBucket || a == ratelimit.LeakyBucket {
		return tr.tb
	}
	return tr.other
}

// redisTraffics returns the two kinds of load. Nothing refills, and no window ends, during a
// run.
//
// allow, token bucket: one token per 1000 s with a burst of 9·10⁶, the most that refill
// within 2⁵³ µs, the longest refill any algorithm accepts. Every call is allowed, and
// leaves its bucket one more token short, so the bucket's key lives on in Redis (its TTL is
// the time to refill, 1000 s more with each call) and every call, on both limiters, reads a
// live bucket and writes it back: the full work of an admitted request. With a limit that
// refilled within the run, keys would expire between visits on 100k keys, and each call
// would find an empty key instead. The leaky bucket, whose key lives as long as its queue
// takes to drain, gets the same limit. The window algorithms get a burst of 10⁹ over a
// window of 10⁶ s (Rate 1000/s): Burst/Rate is their window, which internal/args caps at
// 2⁵³ µs, and their keys live until the window (or the next) ends.
//
// deny: a burst of 1, taken before the timer: every timed call reads the bucket and writes
// nothing. The token bucket and the leaky bucket refill in 1000 s; the window algorithms come
// back after windows of 10⁶ s (11.6 days), aligned to the Unix epoch, so a run crosses a
// window's end once in thousands.
//
// redis_rate's rate is a whole number per period, hence 1 per 1000 s where ours is 10⁻³/s.
func redisTraffics() []redisTraffic {
	const period = 1000 * time.Second
	return []redisTraffic{
		{
			name: "allow", allow: true,
			tb:    ratelimit.Limit{Rate: 1e-3, Burst: 9e6},
			other: ratelimit.Limit{Rate: 1e3, Burst: 1e9},
			peer:  redis_rate.Limit{Rate: 1, Burst: 1e9, Period: period},
		},
		{
			name: "deny", allow: false,
			tb:    ratelimit.Limit{Rate: 1e-3, Burst: 1},
			other: ratelimit.Limit{Rate: 1e-6, Burst: 1},
			peer:  redis_rate.Limit{Rate: 1, Burst: 1, Period: period},
		},
	}
}

// redisContender is one way of asking Redis for a decision. open returns the decision
// function for tr on client, or nil if the contender cannot run tr (an algorithm the Redis
// backend does not implement, or a limit the algorithm refuses).
type redisContender struct {
	name string
	// denies: whether the contender has a deny path; evalsha, which decides nothing, does
	// not, and runs under allow traffic only.
	denies bool
	open   func(b *testing.B, client *redis.Client, tr redisTraffic) take
}

// redisAlgorithms are the algorithms of ours besides the default token bucket, each a
// contender of its own named "ours-" and the algorithm.
var redisAlgorithms = []ratelimit.Algorithm{
	ratelimit.FixedWindow, ratelimit.SlidingWindowLog, ratelimit.SlidingWindowCounter, ratelimit.LeakyBucket,
}

func redisContenders() []redisContender {
	cs := []redisContender{{"ours", true, openRedisOurs(ratelimit.TokenBucket)}}
	for _, a := range redisAlgorithms {
		cs = append(cs, redisContender{"ours-" + a.String(), true, openRedisOurs(a)})
	}
	return append(cs, redisContender{"ours-valkey", true, openValkeyOurs},
		redisContender{"redis_rate", true, openRedisRate}, redisContender{"evalsha", false, openEvalSHA},
		redisContender{"evalsha-valkey", false, openValkeyEvalSHA})
}

// openRedisOurs is distributed.New with its defaults, the "ratelimit:" prefix and a 50 ms
// deadline per decision, and algorithm a.
func openRedisOurs(a ratelimit.Algorithm) func(*testing.B, *redis.Client, redisTraffic) take {
	return func(b *testing.B, client *redis.Client, tr redisTraffic) take {
		l, err := distributed.New(client, distributed.WithAlgorithm(a))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		ctx, limit := context.Background(), tr.ours(a)
		// An empty key is refused before any round trip, but only after an algorithm the
		// backend does not implement.
		if _, err := l.Allow(ctx, "", limit); errors.Is(err, ratelimit.ErrNotSupported) {
			return nil
		}
		// The sliding log keeps one entry per token, so it refuses the allow traffic's burst of
		// 10⁹; it runs under deny traffic only.
		if a == ratelimit.SlidingWindowLog && limit.Burst > args.MaxLogBurst {
			return nil
		}
		return func(key string) (bool, error) {
			res, err := l.Allow(ctx, key, limit)
			return res.Allowed, err
		}
	}
}

func openRedisRate(_ *testing.B, client *redis.Client, tr redisTraffic) take {
	l := redis_rate.NewLimiter(client)
	ctx, limit := context.Background(), tr.peer
	return func(key string) (bool, error) {
		res, err := l.Allow(ctx, key, limit)
		if err != nil {
			return false, err
		}
		return res.Allowed == 1, nil
	}
}

// noop is the floor: a script that does nothing, so that running it costs exactly one
// EVALSHA round trip and Redis's own overhead for a script.
var noop = redis.NewScript("return 1")

// openEvalSHA runs noop on the key, as a limiter would, and counts its 1 as an allowed call.
func openEvalSHA(_ *testing.B, client *redis.Client, _ redisTraffic) take {
	ctx := context.Background()
	return func(key string) (bool, error) {
		n, err := noop.Run(ctx, client, []string{key}).Int64()
		return n == 1, err
	}
}

// prepareRedis uses every key once with decide, so that every bucket exists (under deny
// traffic, drained) and every script is loaded before the timer starts. It fails b if any
// first call was denied (a new bucket is full, under either traffic) or, for a limiter,
// unless Redis then holds exactly one more key per bucket than before.
//
// A call that failed is not retried: the failures seen here are ours' 50 ms deadline passing
// on a busy machine, after the script has most likely run, and a second call would drain a
// deny bucket twice. The count of keys in Redis catches a call that never arrived.
func prepareRedis(b *testing.B, srv *redistest.Server, c redisContender, decide take, keys []string) {
	b.Helper()
	before := dbSize(b, srv)
	allowed, failed := spread(8, keys, decide)
	if allowed+failed != int64(len(keys)) {
		b.Fatalf("first calls on %d keys: %d allowed, %d errors, the rest denied", len(keys), allowed, failed)
	}
	want := int64(len(keys))
	if !c.denies {
		want = 0 // evalsha writes nothing
	}
	if got := dbSize(b, srv) - before; got != want {
		b.Fatalf("Redis holds %d more keys after using %d, want %d more", got, len(keys), want)
	}
}

func dbSize(b *testing.B, srv *redistest.Server) int64 {
	b.Helper()
	n, err := srv.Do("DBSIZE")
	if err != nil {
		b.Fatal(err)
	}
	return n.(int64)
}

// BenchmarkRedis runs each scenario (keys, traffic, goroutines) on every contender, one
// after the other, so that the figures they are compared by come from the same few seconds
// of a machine whose load drifts. Redis is emptied before each keys × traffic pair, whose
// buckets each contender then makes the first time one of its benchmarks runs: every round
// after that starts from state its traffic allows (allow's burst of 10⁹ outlasts them all).
// The contenders' keys do not collide: ours writes "ratelimit:<key>:<tag>:<rate>:<burst>",
// with a tag per algorithm (tb, fw, swc, ...), redis_rate "rate:<key>", evalsha nothing;
// ours-valkey "valkey:<key>:tb:...".
func BenchmarkRedis(b *testing.B) {
	srv := redistest.NewServer(b)
	pinRedis(b, srv)
	client := newRedisClient(srv.Addr())
	b.Cleanup(func() { client.Close() })
	warmPool(b, client)
	sets := keySets()
	for _, set := range sets {
		for _, tr := range redisTraffics() {
			flushed := false
			type entrant struct {
				redisContender
				decide   take
				prepared bool
			}
			var entrants []*entrant
			for _, c := range redisContenders() {
				if tr.allow || c.denies {
					entrants = append(entrants, &entrant{redisContender: c, decide: c.open(b, client, tr)})
				}
			}
			for _, g := range redisGoroutines {
				for _, e := range entrants {
					name := e.name + "/" + set.name + "/" + tr.name + "/" + strconv.Itoa(g)
					b.Run(name, func(b *testing.B) {
						if e.decide == nil {
							b.Skipf("%s cannot run %s traffic on the Redis backend", e.name, tr.name)
						}
						if !flushed {
							if _, err := srv.Do("FLUSHALL"); err != nil {
								b.Fatal(err)
							}
							flushed = true
						}
						if !e.prepared {
							prepareRedis(b, srv, e.redisContender, e.decide, set.keys)
							e.prepared = true
						}
						runRedisLoad(b, srv, g, set.keys, tr.allow, e.decide)
					})
				}
			}
		}
	}
}
