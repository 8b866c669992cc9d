package bench

import (
	"context"
	"strconv"
	"testing"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/lease"
)

// leaseInstances is the fleet of BenchmarkLease: 8 instances, each with a client and a
// lease.Limiter of its own, in this one process.
const leaseInstances = 8

// leaseLimit is the global key's limit: 1,000/s with a burst of 10⁹, which no run drains,
// so that every decision is allowed and is a leased decision's full work.
var leaseLimit = ratelimit.Limit{Rate: 1000, Burst: 1e9}

// BenchmarkLease: one global key decided by 8 instances from 64 goroutines (8 each, in
// turn), beside a bare EVALSHA of `return 1` on one key from as many goroutines, in one
// run. It logs the bound of any window W: Burst + Rate·W + k·c, with c the chunk cap.
//
//	cd bench && taskset -c 1 go test -run '^$' -bench 'BenchmarkLease' -benchtime 2s \
//		-count 1 -args -redis-cpu 0
func BenchmarkLease(b *testing.B) {
	srv := redistest.NewServer(b)
	pinRedis(b, srv)
	ctx := context.Background()
	keys := make([]string, leaseInstances)
	instances := make([]*lease.Limiter, leaseInstances)
	for i := range instances {
		client := newRedisClient(srv.Addr())
		b.Cleanup(func() { client.Close() })
		backend, err := distributed.New(client)
		if err != nil {
			b.Fatal(err)
		}
		instances[i] = lease.New(backend, lease.WithInstances(leaseInstances),
			lease.WithHot(func(string, ratelimit.Limit) bool { return true }))
		b.Cleanup(func() { instances[i].Close() })
		keys[i] = strconv.Itoa(i) // the instance that decides: every call is on key "global"
	}
	leased := func(key string) (bool, error) {
		i := int(key[0] - '0')
		res, err := instances[i].Allow(ctx, "global", leaseLimit)
		return res.Allowed, err
	}
	c := leaseLimit.Burst / (lease.CapShare * leaseInstances)
	b.Logf("bound of any window W: Burst + Rate·W + k·c = %d + %g/s·W + %d·%d", leaseLimit.Burst,
		leaseLimit.Rate, leaseInstances, c)
	b.Run("lease/hot/64", func(b *testing.B) {
		for _, k := range keys {
			if ok, err := leased(k); !ok || err != nil {
				b.Fatalf("the first decision: allowed %v, %v", ok, err)
			}
		}
		before, err := srv.ScriptCalls()
		if err != nil {
			b.Fatal(err)
		}
		runRedisLoad(b, srv, 64, keys, true, leased)
		after, err := srv.ScriptCalls()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(after-before)/float64(b.N), "scripts/op")
	})
	client := newRedisClient(srv.Addr())
	b.Cleanup(func() { client.Close() })
	warmPool(b, client)
	evalSHA := openEvalSHA(b, client, redisTraffic{})
	b.Run("evalsha/hot/64", func(b *testing.B) {
		runRedisLoad(b, srv, 64, []string{"global"}, true, evalSHA)
	})
}
