package faults

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// newProxy starts a toxiproxy, in this process, listening on a loopback port of its own and
// forwarding to upstream. It is stopped (its connections closed) by the test's cleanup.
func newProxy(t *testing.T, upstream string) *toxiproxy.Proxy {
	t.Helper()
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(api, "redis", "127.0.0.1:0", upstream)
	require.NoError(t, p.Start())
	t.Cleanup(p.Stop)
	return p
}

// slowDown delays every reply from Redis by d: the commands reach Redis, and run there, at
// once, but their answers arrive d late, the case in which a client that gives up and
// sends the command again has it run twice.
func slowDown(t *testing.T, p *toxiproxy.Proxy, d time.Duration) {
	t.Helper()
	toxic := `{"name":"slow","type":"latency","stream":"downstream","attributes":{"latency":` +
		strings.TrimSuffix(d.String(), "ms") + `}}`
	require.True(t, strings.HasSuffix(d.String(), "ms") && d%time.Millisecond == 0, "whole milliseconds: %v", d)
	_, err := p.Toxics.AddToxicJson(strings.NewReader(toxic))
	require.NoError(t, err)
}

func speedUp(t *testing.T, p *toxiproxy.Proxy) {
	t.Helper()
	require.NoError(t, p.Toxics.RemoveToxic(context.Background(), "slow"))
}

// counter is the limit of the double-charge tests: a token per 1000 s and a burst of 10⁶,
// so that every request is admitted and nothing refills while a test runs. After k script
// runs, a bucket's Remaining is exactly 10⁶ − k: Redis's own state counts the charges.
var counter = ratelimit.Limit{Rate: 1e-3, Burst: 1e6}

// charged returns how many tokens Redis has taken from key's counter bucket, itself
// taking one more (counted) through a client that bypasses any proxy.
func charged(t *testing.T, server *redistest.Server, key string) int64 {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: server.Addr()})
	defer c.Close()
	l, err := distributed.New(c, distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)
	res, err := l.Allow(context.Background(), key, counter)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	return int64(counter.Burst-res.Remaining) - 1
}

// TestSlowRedis: Redis's replies slowed by 200 ms through a loopback proxy, for a second
// in the middle of a load test made of direct calls. The 99th percentile of a decision
// stays within the deadline (compared, as in outage, with the healthy phases), the breaker
// opens and closes again within a second of Redis being fast again (less stalls, as in
// outage), and no request is
// charged twice: Redis ran the script at most once per call the fallback Limiter made to
// the primary (and at least once per call that succeeded), by Redis's own count.
//
// It runs with the client settings
// https://github.com/sluice-go/ratelimit/blob/main/docs/redis.md recommends
// (ContextTimeoutEnabled) and with a client that ignores context deadlines (the limiter then
// stops waiting at the deadline in a goroutine of its own), both with go-redis's default
// retries.
func TestSlowRedis(t *testing.T) {
	for _, honours := range []bool{true, false} {
		t.Run(map[bool]string{true: "ContextTimeoutEnabled", false: "Guarded"}[honours], func(t *testing.T) {
			noLeaks(t)
			server := redistest.NewServer(t)
			proxy := newProxy(t, server.Addr())
			client := redis.NewClient(&redis.Options{Addr: proxy.Listen, ContextTimeoutEnabled: honours})
			t.Cleanup(func() { _ = client.Close() })
			s := newStack(t, client, true)
			ctx := context.Background()
			_, err := s.timed.Allow(ctx, "k", counter)
			require.NoError(t, err)

			stalled := measureStalls(t)
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				run(outageWorkers, stop, func() int {
					_, _ = s.timed.Allow(ctx, "k", counter) // timed records the outcome
					return 0
				})
			}()
			start := time.Now()
			time.Sleep(300 * time.Millisecond) // real time, against a real Redis
			slowed := time.Now()
			slowDown(t, proxy, 200*time.Millisecond)
			time.Sleep(time.Second)
			speedUp(t, proxy)
			fast := time.Now()
			s.events.waitFor(fallback.Closed, fast, 5*time.Second)
			time.Sleep(500 * time.Millisecond)
			close(stop)
			<-done
			end := time.Now()

			decisions := s.timed.all()
			before := summarize("before", decisions, start, slowed)
			slow := summarize("slow", decisions, slowed, fast)
			after := summarize("after", decisions, fast, end)
			for _, p := range []phase{before, slow, after} {
				t.Logf("%-6s %4.2fs: %6d decisions, %d failed; p50 %v p99 %v max %v", p.name, p.to.Sub(p.from).Seconds(),
					p.n, p.failed, p.p50.Round(time.Microsecond), p.p99.Round(time.Microsecond), p.max.Round(time.Microsecond))
			}
			require.Zero(t, before.failed+slow.failed+after.failed, "failed decisions")
			require.LessOrEqual(t, slow.p99, max(before.p99, after.p99)+distributed.DefaultTimeout, "p99 while Redis was slow")
			opened, ok := s.events.first(fallback.Open, slowed)
			require.True(t, ok, "the breaker never opened while Redis was slow")
			closed, ok := s.events.first(fallback.Closed, fast)
			require.True(t, ok, "the breaker never closed once Redis was fast again")
			lost := stalled.within(fast, closed)
			t.Logf("breaker opened %v after Redis slowed; closed %v after it was fast again (%v of it stalled)",
				opened.Sub(slowed).Round(time.Millisecond), closed.Sub(fast).Round(time.Millisecond), lost.Round(time.Millisecond))
			require.LessOrEqual(t, closed.Sub(fast)-lost, time.Second)

			// Replies still on their way may be read by the guard's goroutines, but every
			// command reached Redis long ago: its count is final, and stays so.
			calls, failures := s.primary.calls.Load(), s.primary.failures.Load()
			runs := charged(t, server, "k")
			time.Sleep(300 * time.Millisecond) // longer than the 200 ms delay
			require.Equal(t, runs+1, charged(t, server, "k"), "Redis ran a script after the load had stopped")
			t.Logf("the primary was called %d times (%d failed); Redis ran the script %d times", calls, failures, runs)
			require.LessOrEqual(t, runs, calls, "a request was charged twice")
			require.GreaterOrEqual(t, runs, calls-failures)
			require.Positive(t, failures, "no call timed out: the test proves nothing")
		})
	}
}

// TestUnsafeReadTimeout is the control experiment: a client whose ReadTimeout (10 ms) is
// shorter than the limiter's deadline (50 ms), with go-redis's default retries, does charge
// requests twice when replies are slow. go-redis retries a command whose reply did not come
// within ReadTimeout while the context still has time, on another connection of its pool, and
// the first run has already taken its tokens. It is why
// https://github.com/sluice-go/ratelimit/blob/main/docs/redis.md asks for a ReadTimeout no
// shorter than the deadline.
//
// The pool is filled with open connections first, as a busy service's is: a new connection
// would not get through its handshake with replies 200 ms late, and the retry would never
// reach Redis. It is filled through a client with go-redis's default timeouts, which shares
// its pool with the unsafe one (Client.WithTimeout): on a loaded machine a handshake does not
// always finish within 10 ms.
func TestUnsafeReadTimeout(t *testing.T) {
	noLeaks(t)
	server := redistest.NewServer(t)
	proxy := newProxy(t, server.Addr())
	const conns = 32
	filler := redis.NewClient(&redis.Options{Addr: proxy.Listen, ContextTimeoutEnabled: true, PoolSize: conns})
	t.Cleanup(func() { _ = filler.Close() })
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() { _ = filler.Ping(context.Background()).Err() })
	}
	wg.Wait()
	// Each call below takes at most four connections (a first try and three retries).
	require.GreaterOrEqual(t, filler.PoolStats().IdleConns, uint32(conns/2), "the pool did not fill")
	client := filler.WithTimeout(10 * time.Millisecond)
	// Load the script through a client of its own, on another key, so that the calls below
	// are the only ones on theirs.
	charged(t, server, "warm-up")
	l, err := distributed.New(client)
	require.NoError(t, err)
	slowDown(t, proxy, 200*time.Millisecond)

	const calls = 3
	for range calls {
		_, err := l.Allow(context.Background(), "k", counter)
		require.Error(t, err)
	}
	time.Sleep(300 * time.Millisecond) // let the last retries reach Redis
	runs := charged(t, server, "k")
	t.Logf("%d calls, each timed out; Redis ran the script %d times", calls, runs)
	require.Greater(t, runs, int64(calls), "no request was charged twice: the control failed")
}
