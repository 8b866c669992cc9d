package bench

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
)

// BenchmarkFallbackHotDenied: one hot key, every call denied, 64 goroutines, on a local
// redis-server, with the harness of BenchmarkRedis:
//
//   - evalsha: a bare EVALSHA of a script that does nothing (allow traffic: it decides
//     nothing), the floor of any Redis limiter;
//   - ours: distributed.New(client) alone;
//   - cached: fallback.New(distributed.New(client), nil) with its defaults, whose denial
//     cache answers the calls Redis is known to deny.
//
// Besides BenchmarkRedis's metrics, each reports scripts/op, the scripts Redis ran per
// decision. The benchmark fails if a timed call was allowed (an over-admission) or, for
// cached, if Redis ran a script for more than the first call of each goroutine (which all
// find the cache empty) and one call in a thousand.
func BenchmarkFallbackHotDenied(b *testing.B) {
	srv := redistest.NewServer(b)
	client := newRedisClient(srv.Addr())
	b.Cleanup(func() { client.Close() })
	warmPool(b, client)
	deny := redisTraffics()[1]
	keys := ipKeys(1)
	contenders := []struct {
		name  string
		allow bool
		open  func(b *testing.B) take
	}{
		{"evalsha", true, func(b *testing.B) take { return openEvalSHA(b, client, deny) }},
		{"ours", false, func(b *testing.B) take { return openRedisOurs(ratelimit.TokenBucket)(b, client, deny) }},
		{"cached", false, func(b *testing.B) take {
			primary, err := distributed.New(client)
			if err != nil {
				b.Fatal(err)
			}
			l := fallback.New(primary, nil)
			b.Cleanup(func() { l.Close() })
			ctx := context.Background()
			return func(key string) (bool, error) {
				res, err := l.Allow(ctx, key, deny.ours(ratelimit.TokenBucket))
				return res.Allowed, err
			}
		}},
	}
	for _, c := range contenders {
		b.Run(c.name+"/hot/deny/64", func(b *testing.B) {
			if _, err := srv.Do("FLUSHALL"); err != nil {
				b.Fatal(err)
			}
			decide := c.open(b)
			if !c.allow {
				// A new bucket is full: the first call is allowed and drains it.
				if ok, err := decide(keys[0]); err != nil || !ok {
					b.Fatalf("first call: allowed %v, error %v", ok, err)
				}
			}
			runRedisLoad(b, srv, 64, keys, c.allow, decide)
			scripts := commandStats(b, srv)["evalsha"].calls + commandStats(b, srv)["eval"].calls
			b.ReportMetric(float64(scripts)/float64(b.N), "scripts/op")
			if c.name == "cached" && (scripts-64)*1000 > int64(b.N) {
				b.Fatalf("Redis ran %d scripts for %d calls", scripts, b.N)
			}
		})
	}
}

// BenchmarkFallbackOpen: the cost of a decision while the breaker is open, against the
// local limiter that then decides (BenchmarkAllow's keys, traffic and modes):
//
//   - local: local.New() alone;
//   - open: fallback.New(a Redis backend on a dead address, local.New()) with its defaults
//     (denial cache on) but a cooldown of an hour, opened before the timer by five failed
//     calls; no timed call reaches the primary (checked).
func BenchmarkFallbackOpen(b *testing.B) {
	sets := keySets()
	contenders := []contender{{"local", openOurs}, {"open", openBrokenFallback}}
	for _, set := range sets {
		for _, tr := range traffics() {
			keys := set.keys
			// The two contenders run back to back on each scenario, so that the ratio of
			// their figures comes from the same few seconds of a machine whose load drifts.
			for _, c := range contenders {
				b.Run(c.name+"/"+set.name+"/"+tr.name+"/serial", func(b *testing.B) {
					allowed, failed := decideSerial(b, prepare(b, c, tr, keys), keys)
					checkPath(b, tr, int64(b.N), allowed, failed)
				})
			}
			for _, c := range contenders {
				b.Run(c.name+"/"+set.name+"/"+tr.name+"/parallel", func(b *testing.B) {
					decide := prepare(b, c, tr, keys)
					allowed, failed := decideParallel(b, decide, keys)
					checkPath(b, tr, int64(b.N), allowed, failed)
				})
			}
		}
	}
}

// openBrokenFallback builds the "open" contender: its breaker is open when it returns, and
// its bucket count is the secondary's less the bucket of the calls that opened it.
func openBrokenFallback(b *testing.B, tr traffic) (take, func([]string) int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	client := redis.NewClient(&redis.Options{Addr: dead, ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	b.Cleanup(func() { client.Close() })
	primary, err := distributed.New(client)
	if err != nil {
		b.Fatal(err)
	}
	var calls atomic.Int64
	secondary := local.New()
	b.Cleanup(func() { secondary.Close() })
	l := fallback.New(primary, secondary, fallback.WithCooldown(time.Hour),
		fallback.WithErrorHandler(func(context.Context, string, error) { calls.Add(1) }))
	b.Cleanup(func() {
		l.Close()
		if calls.Load() != fallback.DefaultFailureThreshold {
			b.Errorf("the primary failed %d times, want %d: the breaker closed", calls.Load(), fallback.DefaultFailureThreshold)
		}
	})
	ctx := context.Background()
	warm := ratelimit.Limit{Rate: 1, Burst: 1e9}
	for range fallback.DefaultFailureThreshold {
		if _, err := l.Allow(ctx, "warm-up", warm); err != nil {
			b.Fatal(err)
		}
	}
	if l.State() != fallback.Open {
		b.Fatalf("breaker %v after %d failures", l.State(), fallback.DefaultFailureThreshold)
	}
	limit := tr.limit
	decide := func(key string) (bool, error) {
		res, err := l.Allow(ctx, key, limit)
		return res.Allowed, err
	}
	return decide, func([]string) int { return secondary.Len() - 1 }
}

// BenchmarkFallbackOpenRatio measures what BenchmarkFallbackOpen's serial scenarios do, in
// a way a busy machine disturbs less: each op is one decision by local and one by open,
// made in alternating blocks of 1,000, each block timed on its own, so that both contenders
// meet the same load within a millisecond. It reports local-ns/op, open-ns/op and their
// ratio, open/local.
func BenchmarkFallbackOpenRatio(b *testing.B) {
	const block = 1000
	sets := keySets()
	for _, set := range sets {
		for _, tr := range traffics() {
			b.Run(set.name+"/"+tr.name, func(b *testing.B) {
				keys := set.keys
				decide := [2]take{
					prepare(b, contender{"local", openOurs}, tr, keys),
					prepare(b, contender{"open", openBrokenFallback}, tr, keys),
				}
				b.ReportAllocs()
				b.ResetTimer()
				spent := interleaved(b, tr, decide[:], keys, block)
				b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "local-ns/op")
				b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "open-ns/op")
				b.ReportMetric(float64(spent[1])/float64(spent[0]), "open/local")
			})
		}
	}
}
