package bench

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// floorScripts are the steps from a script that does nothing to the token bucket's, each
// sent as one EVALSHA per decision with no pipelining, so that BenchmarkRedisFloor shows
// what each step costs at a given number of goroutines. "calls" makes the three Redis calls
// any limiter on the Redis clock needs (TIME, GET, SET with an expiry) and decides nothing;
// "calls+reply" answers with the four integers a Result needs, as the limiter's scripts do.
var floorScripts = []struct {
	name   string
	script *redis.Script
}{
	{"return1", noop},
	{"calls", redis.NewScript(`local t = redis.call('TIME')
local v = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], t[2], 'PX', 3600000)
return 1`)},
	{"calls+reply", redis.NewScript(`local t = redis.call('TIME')
local v = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], t[2], 'PX', 3600000)
return {1, 999999999, 0, tonumber(t[2])}`)},
}

// BenchmarkRedisFloor measures how close any limiter that runs one script per decision can
// come to a bare EVALSHA on this machine: the floor scripts (and "calls+reply" through
// go-redis's autopipeliner), then ours (the token bucket, through distributed.New, shared
// pipelines and all) and redis_rate, under allow traffic, on the same client and key sets as
// BenchmarkRedis. A floor script's first reply element is 1, which counts as allowed. In the
// pinned mode (see redisCPU) the client has one core, whose CPU per decision (cli-cpu-us/op)
// bounds the throughput at 8 goroutines.
//
//	cd bench && taskset -c 1 go test -run '^$' -bench 'RedisFloor' -benchmem -benchtime 2s \
//		-count 6 -args -redis-cpu 0
func BenchmarkRedisFloor(b *testing.B) {
	srv := redistest.NewServer(b)
	pinRedis(b, srv)
	client := newRedisClient(srv.Addr())
	b.Cleanup(func() { client.Close() })
	warmPool(b, client)
	ctx := context.Background()
	l, err := distributed.New(client)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	limit := redisTraffics()[0].ours(ratelimit.TokenBucket) // the allow traffic
	type step struct {
		name   string
		decide take
	}
	var steps []step
	for _, s := range floorScripts {
		steps = append(steps, step{s.name, func(key string) (bool, error) {
			v, err := s.script.Run(ctx, client, []string{key}).Result()
			if err != nil {
				return false, err
			}
			if vs, ok := v.([]any); ok && len(vs) > 0 {
				v = vs[0]
			}
			return v == int64(1), nil
		}})
	}
	// The same floor script through go-redis's own autopipeliner, which sends what
	// concurrent callers submit together as pipelines: the best go-redis does for a
	// script call from many goroutines, deciding nothing.
	ap, err := client.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ap.Close() })
	steps = append(steps, step{"calls+reply-autopipeline", func(key string) (bool, error) {
		vs, err := floorScripts[2].script.Run(ctx, ap, []string{key}).Slice()
		if err != nil {
			return false, err
		}
		return vs[0] == int64(1), nil
	}})
	// Ours without its own deadline (WithTimeout(-1)), to show what the deadline costs a
	// decision.
	unbounded, err := distributed.New(client, distributed.WithTimeout(-1))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { unbounded.Close() })
	steps = append(steps, step{"ours", func(key string) (bool, error) {
		res, err := l.Allow(ctx, key, limit)
		return res.Allowed, err
	}}, step{"ours-no-deadline", func(key string) (bool, error) {
		res, err := unbounded.Allow(ctx, key, limit)
		return res.Allowed, err
	}}, step{"redis_rate", openRedisRate(b, client, redisTraffics()[0])})
	for _, set := range []struct {
		name string
		keys []string
	}{{"hot", ipKeys(1)}, {"100k", ipKeys(100_000)}} {
		prepared := make([]bool, len(steps))
		for _, g := range []int{8, 64} {
			for i, s := range steps {
				b.Run(s.name+"/"+set.name+"/"+strconv.Itoa(g), func(b *testing.B) {
					if !prepared[i] { // every key written, before any timer
						prepareFloor(b, set.keys, s.decide)
						prepared[i] = true
					}
					runRedisLoad(b, srv, g, set.keys, true, s.decide)
				})
			}
		}
	}
}

// prepareFloor calls decide on every key, then again on the keys whose call failed, at most
// five passes: under allow traffic a second call on a key only takes one more token of a
// burst no run exhausts, and ours fails a call when its 50 ms deadline passes on a busy
// machine. It fails b if a call was denied, or a key still fails after five passes.
func prepareFloor(b *testing.B, keys []string, decide take) {
	b.Helper()
	for pass := 1; len(keys) > 0; pass++ {
		var mu sync.Mutex
		var again []string
		allowed, failed := spread(8, keys, func(key string) (bool, error) {
			ok, err := decide(key)
			if err != nil {
				mu.Lock()
				again = append(again, key)
				mu.Unlock()
			}
			return ok, err
		})
		if allowed+failed != int64(len(keys)) || (failed > 0 && pass == 5) {
			b.Fatalf("calls on %d keys (pass %d): %d allowed, %d failed", len(keys), pass, allowed, failed)
		}
		keys = again
	}
}
