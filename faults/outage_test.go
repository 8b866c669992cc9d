package faults

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// The limit of the outage tests, for the one key all their requests share, and the share of
// it each of the two instances expected (fallback.WithInstances(2)) enforces while Redis is
// away.
var (
	outageLimit = ratelimit.Limit{Rate: 100, Burst: 20}
	outageShare = ratelimit.Limit{Rate: 50, Burst: 10}
)

// outageWorkers is how many clients send requests in a loop during an outage test.
//
// Each request in flight when Redis stops costs go-redis a failed dial, and so does each
// probe of the breaker while Redis is away (4 a second); after PoolSize failed dials (20 on
// two cores) the go-redis pool stops dialing and re-dials once a second in the background,
// which delays the return to Redis by up to a second more (TestGinSaturatedPool). Eight
// workers and a one-second outage stay clear of that.
const outageWorkers = 8

// outage runs a load of requests through do while Redis is healthy (0.5 s), stopped (1 s)
// and back (0.5 s once the breaker closed, and on until a request is refused, up to 5 s
// more), and checks what the issue asks of a fallback Limiter:
//
//   - no request fails (do reports a status other than 200 or 429 for a failure), whether
//     a secondary decides while Redis is away or, without one, the middleware fails open;
//   - the outage adds at most the primary's deadline (50 ms) to the 99th percentile of the
//     time a decision takes, less stalls (the limiter's part of a request's latency, which
//     do must obtain from s.timed);
//   - with a secondary, its share of the limit is enforced while Redis is away: at most
//     Burst + Rate × the time away requests pass, and some are refused;
//   - limiting through Redis resumes within resume of Redis answering again, not counting
//     the time this process was kept from running by a busy machine: the breaker closes,
//     and the new Redis runs scripts and refuses requests.
//
// The 99th percentile while Redis is away is compared with the worse of those before and
// after, so that a machine whose load changes during the test does not fail it. The
// requests' own latency is logged, not checked: on a loaded machine it is mostly
// scheduling, whatever the limiter does.
func outage(t *testing.T, server *redistest.Server, s *stack, degrade bool, workers int, resume time.Duration, do func() int) {
	t.Helper()
	require.NotZero(t, do(), "a first request, which also opens a connection to Redis")
	stalled := measureStalls(t)
	stop := make(chan struct{})
	done := make(chan []sample)
	start := time.Now()
	var refused atomic.Int64 // when the last request refused started, in Unix nanoseconds
	go func() {
		done <- run(workers, stop, func() int {
			at := time.Now()
			code := do()
			if code == 429 {
				refused.Store(at.UnixNano())
			}
			return code
		})
	}()

	time.Sleep(500 * time.Millisecond) // real time: the load runs against a real Redis
	down := time.Now()
	server.Stop()
	stopped := time.Now()
	time.Sleep(time.Second)
	restarting := time.Now()
	back := server.Restart(t)
	up := time.Now()
	s.events.waitFor(fallback.Closed, up, 5*time.Second)
	time.Sleep(500 * time.Millisecond)
	// A loaded machine sends fewer requests, and may miss the primary's deadline and reopen
	// the breaker: the load goes on, up to 5 s, until Redis has refused one since it closed.
	if c, ok := s.events.first(fallback.Closed, up); ok {
		for deadline := time.Now().Add(5 * time.Second); refused.Load() < c.UnixNano() && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	close(stop)
	samples := <-done
	end := time.Now()

	before := summarize("before", samples, start, down)
	away := summarize("away", samples, stopped, restarting)
	after := summarize("after", samples, up, end)
	all := summarize("all", samples, start, end)
	// Decisions less the time within each that this process was kept from running: a
	// restart on a loaded machine stalls the test for tenths of a second, and that is no
	// decision's doing (as in faultRun.latencies).
	decisions := s.timed.all()
	for i, d := range decisions {
		decisions[i].took = d.took - stalled.within(d.at, d.at.Add(d.took))
	}
	dBefore := summarize("", decisions, start, down)
	dAway := summarize("", decisions, stopped, restarting)
	dAfter := summarize("", decisions, up, end)
	before.log(t, dBefore)
	away.log(t, dAway)
	after.log(t, dAfter)
	closed, ok := s.events.first(fallback.Closed, up)
	require.True(t, ok, "the breaker never closed after Redis came back")
	opened, ok := s.events.first(fallback.Open, down)
	require.True(t, ok, "the breaker never opened while Redis was away")
	lost := stalled.within(up, closed)
	t.Logf("breaker opened %v after Redis began to stop; closed %v after Redis answered again (%v of it stalled)",
		opened.Sub(down).Round(time.Millisecond), closed.Sub(up).Round(time.Millisecond), lost.Round(time.Millisecond))

	for _, f := range s.events.failedSince(up) {
		t.Logf("failure %v after Redis answered again: %v", f.at.Sub(up).Round(time.Millisecond), f.err)
	}
	for _, x := range samples {
		if x.code != 200 && x.code != 429 {
			t.Logf("request failed %v after the start, in %v: status %d", x.at.Sub(start).Round(time.Millisecond), x.took, x.code)
		}
	}
	require.Zero(t, all.failed, "failed requests")
	require.LessOrEqual(t, dAway.p99, max(dBefore.p99, dAfter.p99)+distributed.DefaultTimeout, "p99 of decisions while Redis was away, less stalls")
	if degrade {
		most := float64(outageShare.Burst) + outageShare.Rate*restarting.Sub(stopped).Seconds() + 1
		require.LessOrEqual(t, float64(away.ok), most, "requests admitted while Redis was away")
		require.Positive(t, away.limited, "requests refused while Redis was away")
	}
	require.LessOrEqual(t, closed.Sub(up)-lost, resume, "limiting through Redis resumed late")
	recovered := summarize("recovered", samples, closed, end)
	require.Positive(t, recovered.limited, "requests refused once Redis was back")
	require.Positive(t, scriptCalls(t, back), "scripts run by the new Redis")
}

// scriptCalls returns how many times server has run a script since it started or its
// statistics were last reset.
func scriptCalls(t *testing.T, server *redistest.Server) int64 {
	t.Helper()
	n, err := server.ScriptCalls()
	require.NoError(t, err)
	return n
}
