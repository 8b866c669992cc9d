package bench

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit/internal/redistest"
)

// warmPool opens every connection of client's pool before any timer starts, so that no
// timed call pays for a dial.
func warmPool(b *testing.B, client *redis.Client) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make([]error, redisPoolSize)
	for i := range errs {
		wg.Go(func() { errs[i] = client.Ping(context.Background()).Err() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// spread calls decide once on every key, from goroutines goroutines, and counts the calls
// allowed and those that failed.
func spread(goroutines int, keys []string, decide take) (allowed, failed int64) {
	var a, f atomic.Int64
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := g; i < len(keys); i += goroutines {
				ok, err := decide(keys[i])
				switch {
				case err != nil:
					f.Add(1)
				case ok:
					a.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return a.Load(), f.Load()
}

// runRedisLoad makes b.N decisions from exactly goroutines goroutines, each walking keys
// from its own starting point, and reports ops/s, the 50th and 99th percentile latency
// (p50-us, p99-us), the share of calls allowed and failed (%allowed, %failed), and what
// Redis spent: CPU per decision (srv-cpu-us/op, from INFO cpu) and time inside the scripts per
// call (srv-us/call, EVALSHA's usec_per_call in INFO commandstats). cli-cpu-us/op is the CPU
// of this whole process (go test) per decision.
//
// It fails b if a call that did not fail was allowed when allow is false, or the reverse, or
// if more than 5 % of the calls failed. Ours fails a call when its 50 ms deadline passes,
// which up to a few calls in a hundred do at 64 goroutines when other processes crowd a
// 2-core machine; those are counted and reported (%failed) rather than treated as a broken
// run. The other contenders have no deadline.
//
// b.N is split as evenly as it goes (the first b.N mod goroutines goroutines make one call
// more than the rest). The goroutines are started, and each one's latency slice allocated,
// before the timer; they wait at a gate the timer's start opens. Latency is the time between
// two consecutive clock readings around a call, so a call's figure includes the loop's own
// few nanoseconds.
func runRedisLoad(b *testing.B, srv *redistest.Server, goroutines int, keys []string, allow bool, decide take) {
	b.Helper()
	lats := make([][]time.Duration, goroutines)
	for g := range lats {
		n := b.N / goroutines
		if g < b.N%goroutines {
			n++
		}
		lats[g] = make([]time.Duration, n)
	}
	var allowed, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for g, lat := range lats {
		wg.Go(func() {
			k := startAt(uint64(g+1), len(keys))
			var a, f int64
			<-gate
			t0 := time.Now()
			for i := range lat {
				ok, err := decide(keys[k])
				t1 := time.Now()
				lat[i], t0 = t1.Sub(t0), t1
				switch {
				case err != nil:
					f++
					first := err // declared here, so that only a failing call allocates it
					firstErr.CompareAndSwap(nil, &first)
				case ok:
					a++
				}
				if k++; k == len(keys) {
					k = 0
				}
			}
			allowed.Add(a)
			failed.Add(f)
		})
	}
	before := readServerStats(b, srv, true)
	cpuBefore := processCPU()
	b.ReportAllocs()
	b.ResetTimer()
	close(gate)
	wg.Wait()
	b.StopTimer()
	cpuAfter := processCPU()
	after := readServerStats(b, srv, false)

	fails := failed.Load()
	if fails*20 > int64(b.N) {
		b.Fatalf("%d of %d calls failed; the first: %v", fails, b.N, *firstErr.Load())
	}
	want := int64(0)
	if allow {
		want = int64(b.N) - fails
	}
	if got := allowed.Load(); got != want {
		b.Fatalf("%d of %d calls allowed, %d failed; want %d allowed", got, b.N, fails, want)
	}

	all := slices.Concat(lats...)
	slices.Sort(all)
	n := float64(b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64(percentile(all, 50).Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(percentile(all, 99).Nanoseconds())/1e3, "p99-us")
	b.ReportMetric(100*float64(allowed.Load())/n, "%allowed")
	b.ReportMetric(100*float64(fails)/n, "%failed")
	b.ReportMetric((after.cpu-before.cpu).Seconds()*1e6/n, "srv-cpu-us/op")
	b.ReportMetric(after.evalsha.usecPerCall(), "srv-us/call")
	if cpuAfter >= 0 && cpuBefore >= 0 {
		b.ReportMetric((cpuAfter-cpuBefore).Seconds()*1e6/n, "cli-cpu-us/op")
	}
}

// percentile returns the p-th percentile of sorted (nearest rank), or 0 if it is empty.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (len(sorted)*p + 99) / 100 // ⌈len·p/100⌉, 1-based
	return sorted[max(rank, 1)-1]
}

// serverStats is what INFO tells of the work Redis has done.
type serverStats struct {
	cpu     time.Duration // used_cpu_user + used_cpu_sys of the redis-server process
	evalsha commandStat
}

// commandStat is one cmdstat_ line of INFO commandstats.
type commandStat struct {
	calls, usec, failed int64
}

func (s commandStat) usecPerCall() float64 {
	if s.calls == 0 {
		return 0
	}
	return float64(s.usec) / float64(s.calls)
}

// readServerStats reads Redis's CPU time and its EVALSHA statistics, having first reset the
// command statistics if reset is true.
func readServerStats(b *testing.B, srv *redistest.Server, reset bool) serverStats {
	b.Helper()
	if reset {
		if _, err := srv.Do("CONFIG", "RESETSTAT"); err != nil {
			b.Fatal(err)
		}
	}
	var s serverStats
	info := redisInfo(b, srv, "cpu")
	for _, field := range []string{"used_cpu_user", "used_cpu_sys"} {
		sec, err := strconv.ParseFloat(info[field], 64)
		if err != nil {
			b.Fatalf("INFO cpu: %s: %v", field, err)
		}
		s.cpu += time.Duration(sec * float64(time.Second))
	}
	s.evalsha = commandStats(b, srv)["evalsha"]
	return s
}

// commandStats returns INFO commandstats, by lower-case command name.
func commandStats(tb testing.TB, srv *redistest.Server) map[string]commandStat {
	tb.Helper()
	stats := map[string]commandStat{}
	for field, value := range redisInfo(tb, srv, "commandstats") {
		name, ok := strings.CutPrefix(field, "cmdstat_")
		if !ok {
			continue
		}
		var s commandStat
		// value reads "calls=3,usec=20,usec_per_call=6.67,rejected_calls=0,failed_calls=0".
		for kv := range strings.SplitSeq(value, ",") {
			k, v, _ := strings.Cut(kv, "=")
			n, _ := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				s.calls = n
			case "usec":
				s.usec = n
			case "failed_calls":
				s.failed = n
			}
		}
		stats[name] = s
	}
	return stats
}

// redisInfo returns the fields of one INFO section.
func redisInfo(tb testing.TB, srv *redistest.Server, section string) map[string]string {
	tb.Helper()
	reply, err := srv.Do("INFO", section)
	if err != nil {
		tb.Fatalf("INFO %s: %v", section, err)
	}
	text, _ := reply.(string)
	fields := map[string]string{}
	for line := range strings.SplitSeq(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	return fields
}
