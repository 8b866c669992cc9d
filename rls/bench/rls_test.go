package rlsbench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// inFlight is how many calls the load keeps going at once.
const inFlight = 32

func entry(k, v string) []*rlv3.RateLimitDescriptor_Entry {
	return []*rlv3.RateLimitDescriptor_Entry{{Key: k, Value: v}}
}

// allowed is the i-th call of the allowed workload: three descriptors, a thousand users,
// ten routes, five tenants, every limit out of reach.
func allowed(i int) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: "bench", Descriptors: []*rlv3.RateLimitDescriptor{
		{Entries: entry("user", "u"+strconv.Itoa(i%1000))},
		{Entries: entry("route", "r"+strconv.Itoa(i%10))},
		{Entries: entry("tenant", "t"+strconv.Itoa(i%5))},
	}}
}

// hot is a call of the hot over-limit workload: the user "hot", over its limit of one an
// hour, beside a route and a tenant.
func hot(i int) *pb.RateLimitRequest {
	r := allowed(i)
	r.Descriptors[0].Entries = entry("user", "hot")
	return r
}

// unlimited is a call of the floor workload: three descriptors of a domain no
// configuration names, answered OK with no limit and no Redis call, so that what bounds
// it is the load and gRPC, on either side.
func unlimited(i int) *pb.RateLimitRequest {
	r := allowed(i)
	r.Domain = "none"
	return r
}

// BenchmarkRLS measures each server on each workload, 3 descriptors a call, inFlight calls
// at once: calls/s, the server's CPU per call (server-µs/call), Redis's (redis-µs/call)
// and the load's (load-µs/call, this process), the 99th percentile of the calls' latency
// (p99-µs), and the calls that answered another code than the workload's (other-code), in
// -rounds interleaved rounds.
func BenchmarkRLS(b *testing.B) {
	f := getFleet(b)
	workloads := []struct {
		name    string
		req     func(int) *pb.RateLimitRequest
		want    pb.RateLimitResponse_Code
		servers []string
	}{
		{"allowed", allowed, pb.RateLimitResponse_OK, []string{"ours", "reference"}},
		{"hot-over-limit", hot, pb.RateLimitResponse_OVER_LIMIT, []string{"ours", "reference", "reference-cache"}},
		{"floor", unlimited, pb.RateLimitResponse_OK, []string{"ours", "reference"}},
	}
	// go test's -count repeats each sub-benchmark in a row; the rounds interleave them.
	for range *rounds {
		for _, w := range workloads {
			for _, name := range w.servers {
				s := f.server(name)
				b.Run(w.name+"/"+name, func(b *testing.B) {
					if _, err := s.client[0].ShouldRateLimit(context.Background(), w.req(0)); err != nil {
						b.Fatal(err) // and the hot key is over its limit from now on
					}
					measure(b, f, s, w.req, w.want)
				})
			}
		}
	}
}

// rounds is how many times BenchmarkRLS measures each server on each workload.
var rounds = flag.Int("rounds", 3, "BenchmarkRLS's rounds, each server and workload once a round")

// measure runs b.N calls of req on s and reports the figures.
func measure(b *testing.B, f *fleet, s *server, req func(int) *pb.RateLimitRequest, want pb.RateLimitResponse_Code) {
	var (
		next     atomic.Int64
		wrong    atomic.Int64
		mu       sync.Mutex
		all      []time.Duration
		firstErr error
	)
	cpu0, err := cpu(s.cmd.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	redis0, err := cpu(f.redis.Process.Pid)
	if err != nil {
		b.Fatal(err)
	}
	load0, err := cpu(os.Getpid())
	if err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(inFlight)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var lat []time.Duration
		for pb.Next() {
			i := int(next.Add(1))
			r := req(i)
			t := time.Now()
			resp, err := s.client[i%conns].ShouldRateLimit(context.Background(), r)
			lat = append(lat, time.Since(t))
			if err != nil {
				mu.Lock()
				firstErr = err
				mu.Unlock()
				continue
			}
			if resp.GetOverallCode() != want {
				wrong.Add(1)
			}
		}
		mu.Lock()
		all = append(all, lat...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	// A call the fallback decided in memory, Redis having been too slow to answer, may be
	// allowed on the hot key (this instance's share of a fresh bucket): counted, and bounded.
	if n := wrong.Load(); n*1000 > int64(b.N) {
		b.Fatalf("%d of %d calls did not answer %v", n, b.N, want)
	}
	cpu1, _ := cpu(s.cmd.Process.Pid)
	redis1, _ := cpu(f.redis.Process.Pid)
	load1, _ := cpu(os.Getpid())
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "server-µs/call")
	b.ReportMetric(float64((redis1-redis0).Microseconds())/float64(b.N), "redis-µs/call")
	b.ReportMetric(float64((load1-load0).Microseconds())/float64(b.N), "load-µs/call")
	b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(wrong.Load()), "other-code")
}

// BenchmarkDifferential sends ours and the reference (no local cache) the same stream of
// calls on fixed-window limits, one at a time, and compares the answers descriptor by
// descriptor: on calls of one descriptor, the code and the remaining; on calls of three
// (one limited descriptor beside two out of reach), the codes. Where a denial charges the
// others (the reference) or none (ours) the remainings of the others differ by design, so
// they are not compared. It fails at the first difference and reports the calls compared.
func BenchmarkDifferential(b *testing.B) {
	f := getFleet(b)
	ours, ref := f.server("ours"), f.server("reference")
	// The limits are an hour long: a run that would cross an hour's end waits for it.
	if left := time.Until(time.Now().Truncate(time.Hour).Add(time.Hour)); left < 2*time.Minute {
		time.Sleep(left + time.Second)
	}
	run := time.Now().UnixNano()
	compared := 0
	for n := range b.N {
		id := fmt.Sprintf("%d-%d", run, n)
		x := uint64(n + 1)
		for i := range 600 {
			x ^= x << 13 // xorshift: the same stream every run
			x ^= x >> 7
			x ^= x << 17
			k := fmt.Sprintf("v%d", x%10)
			req := &pb.RateLimitRequest{Domain: "diff", Descriptors: []*rlv3.RateLimitDescriptor{
				{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "run", Value: id}, {Key: "k", Value: k}}},
			}}
			multi := i%2 == 1
			if multi {
				for _, g := range []string{"a", "b"} {
					req.Descriptors = append(req.Descriptors, &rlv3.RateLimitDescriptor{
						Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "run", Value: id}, {Key: "g", Value: g}},
					})
				}
			}
			a, err := ours.client[0].ShouldRateLimit(context.Background(), req)
			if err != nil {
				b.Fatal(err)
			}
			r, err := ref.client[0].ShouldRateLimit(context.Background(), req)
			if err != nil {
				b.Fatal(err)
			}
			for d := range req.Descriptors {
				sa, sr := a.GetStatuses()[d], r.GetStatuses()[d]
				if sa.GetCode() != sr.GetCode() || (d == 0 && sa.GetLimitRemaining() != sr.GetLimitRemaining()) {
					b.Fatalf("call %d (%s, %d descriptors), descriptor %d: ours %v remaining %d, reference %v remaining %d",
						i, k, len(req.Descriptors), d, sa.GetCode(), sa.GetLimitRemaining(), sr.GetCode(), sr.GetLimitRemaining())
				}
			}
			if a.GetOverallCode() != r.GetOverallCode() {
				b.Fatalf("call %d: overall ours %v, reference %v", i, a.GetOverallCode(), r.GetOverallCode())
			}
			compared++
		}
	}
	b.ReportMetric(float64(compared), "calls-compared")
}
