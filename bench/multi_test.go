package bench

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
)

// multiLimits are three limits that stay allowing for far more calls than a run makes:
// a token every 1000 s with bursts of millions (burst/rate just under 2⁵³ µs).
var multiLimits = []ratelimit.Limit{
	{Rate: 1e-3, Burst: 9e6},
	{Rate: 1e-3, Burst: 8e6},
	{Rate: 1e-3, Burst: 7e6},
}

// BenchmarkAllowAll compares, serially on one Redis node, one AllowN with an AllowAll of the
// three multiLimits on keys of one hash slot ("{user:42}:…"): one script and one round trip
// either way, the AllowAll's script deciding three buckets twice (check, then write). The
// target is AllowAll ≤ 1.3 × AllowN.
//
//	cd bench && go test -run '^$' -bench 'AllowAll' -benchmem -count 3
func BenchmarkAllowAll(b *testing.B) {
	srv := redistest.NewServer(b)
	client := newRedisClient(srv.Addr())
	b.Cleanup(func() { client.Close() })
	l, err := distributed.New(client)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	ctx := context.Background()
	b.Run("AllowN", func(b *testing.B) {
		for b.Loop() {
			res, err := l.AllowN(ctx, "{user:42}:second", multiLimits[0], 1)
			if err != nil || !res.Allowed {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("AllowAll3", func(b *testing.B) {
		reqs := sameSlotRequests()
		for b.Loop() {
			mr, err := l.AllowAll(ctx, reqs)
			if err != nil || !mr.Allowed {
				b.Fatal(mr, err)
			}
		}
	})
}

// BenchmarkAllowAllLocal compares, serially, one AllowN of the local backend with an
// AllowAll of the three multiLimits, and with AllowAllInto, which writes the Results into a
// slice the caller reuses. The target is AllowAll ≤ 3 × AllowN, with no allocation.
//
//	cd bench && go test -run '^$' -bench 'AllowAllLocal' -benchmem -count 5
func BenchmarkAllowAllLocal(b *testing.B) {
	l := local.New()
	b.Cleanup(func() { l.Close() })
	ctx := context.Background()
	reqs := localRequests()
	b.Run("AllowN", func(b *testing.B) {
		for b.Loop() {
			res, err := l.AllowN(ctx, reqs[0].Key, reqs[0].Limit, 1)
			if err != nil || !res.Allowed {
				b.Fatal(res, err)
			}
		}
	})
	b.Run("AllowAll3", func(b *testing.B) {
		for b.Loop() {
			mr, err := l.AllowAll(ctx, reqs)
			if err != nil || !mr.Allowed {
				b.Fatal(mr, err)
			}
		}
	})
	b.Run("AllowAllInto3", func(b *testing.B) {
		results := make([]ratelimit.Result, len(reqs))
		for b.Loop() {
			mr, err := l.AllowAllInto(ctx, reqs, results)
			if err != nil || !mr.Allowed {
				b.Fatal(mr, err)
			}
		}
	})
}

// BenchmarkAllowAllLocalRatio measures what BenchmarkAllowAllLocal does in a way a busy
// machine disturbs less: each op is one AllowN and one AllowAllInto of three limits, made
// in alternating blocks of 1,000, each block timed on its own. It reports both times and
// their ratio, all/one (the target: at most 3).
//
//	cd bench && go test -run '^$' -bench 'AllowAllLocalRatio' -count 5
func BenchmarkAllowAllLocalRatio(b *testing.B) {
	l := local.New()
	b.Cleanup(func() { l.Close() })
	ctx := context.Background()
	reqs := localRequests()
	results := make([]ratelimit.Result, len(reqs))
	decide := []take{
		func(string) (bool, error) {
			res, err := l.AllowN(ctx, reqs[0].Key, reqs[0].Limit, 1)
			return res.Allowed, err
		},
		func(string) (bool, error) {
			mr, err := l.AllowAllInto(ctx, reqs, results)
			return mr.Allowed, err
		},
	}
	b.ReportAllocs()
	b.ResetTimer()
	spent := interleaved(b, traffic{name: "allow", allow: true}, decide, []string{""}, 1000)
	b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "one-ns/op")
	b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "all-ns/op")
	b.ReportMetric(float64(spent[1])/float64(spent[0]), "all/one")
}

// localRequests are three limits of the local backend that no run drains: bursts of 2⁴⁰
// tokens or so.
func localRequests() []ratelimit.Request {
	reqs := sameSlotRequests()
	for i := range reqs {
		reqs[i].Limit = ratelimit.Limit{Rate: 1e3, Burst: 1 << (40 - i)}
	}
	return reqs
}

func sameSlotRequests() []ratelimit.Request {
	return []ratelimit.Request{
		{Key: "{user:42}:second", Limit: multiLimits[0], Name: "second"},
		{Key: "{user:42}:minute", Limit: multiLimits[1], Name: "minute"},
		{Key: "{user:42}:hour", Limit: multiLimits[2], Name: "hour"},
	}
}

// BenchmarkAllowAllCluster runs on a 3-node Cluster: one AllowN, AllowAll of three limits
// whose keys share a hash tag (one script), and of three keys in three slots on three
// masters ("{a}", "{b}", "{c}": slots 15495, 3300 and 7365): one script per slot, in turn.
// "cross-slot deny" drains the bucket of the last slot decided ("{a}"): two slots charged,
// the third denies, the two are refunded: five scripts. Its time bounds how long a
// concurrent caller can find those two buckets holding tokens about to come back.
//
//	cd bench && go test -run '^$' -bench 'AllowAllCluster' -benchmem -count 3
func BenchmarkAllowAllCluster(b *testing.B) {
	cluster := redistest.NewCluster(b)
	client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cluster.Addrs(), ContextTimeoutEnabled: true})
	b.Cleanup(func() { client.Close() })
	// A shared 2-core machine can stall a call past the default 50 ms: a failed run measures
	// nothing.
	l, err := distributed.New(client, distributed.WithTimeout(time.Second))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	ctx := context.Background()
	crossSlot := []ratelimit.Request{
		{Key: "{a}:user", Limit: multiLimits[0], Name: "a"},
		{Key: "{b}:user", Limit: multiLimits[1], Name: "b"},
		{Key: "{c}:user", Limit: multiLimits[2], Name: "c"},
	}
	cases := []struct {
		name  string
		allow bool
		reqs  []ratelimit.Request
	}{
		{"same-slot", true, sameSlotRequests()},
		{"cross-slot", true, crossSlot},
		{"cross-slot deny", false, append(crossSlot[1:3:3], ratelimit.Request{Key: "{a}:drained", Limit: ratelimit.Limit{Rate: 1e-3, Burst: 1}, Name: "a"})},
	}
	if res, err := l.Allow(ctx, "{a}:drained", ratelimit.Limit{Rate: 1e-3, Burst: 1}); err != nil || !res.Allowed {
		b.Fatal(res, err)
	}
	b.Run("AllowN", func(b *testing.B) {
		for b.Loop() {
			res, err := l.AllowN(ctx, "{user:42}:second", multiLimits[0], 1)
			if err != nil || !res.Allowed {
				b.Fatal(res, err)
			}
		}
	})
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				mr, err := l.AllowAll(ctx, c.reqs)
				if err != nil || mr.Allowed != c.allow {
					b.Fatal(mr, err)
				}
			}
		})
	}
}
