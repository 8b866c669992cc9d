package bench

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// commandLog is a go-redis hook that records the name of every command the client sends.
type commandLog struct {
	mu    sync.Mutex
	names []string
}

func (*commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.mu.Lock()
		c.names = append(c.names, cmd.Name())
		c.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (c *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		c.names = append(c.names, "pipeline")
		c.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (c *commandLog) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := map[string]int{}
	for _, name := range c.names {
		n[name]++
	}
	return n
}

// TestRedisOneRoundTripPerDecision checks the performance bar's "one round trip per
// decision" on both sides of the wire, for each algorithm whose script reads the clock, reads
// the bucket and writes it back only on allow (the token bucket and the fixed-window
// algorithms): 200 decisions of ours, on 10 keys with a burst of 5 that does not refill (or
// reach a window's end) during the test, so that 50 are allowed and 150 denied.
//
// The client must send exactly one EVALSHA per decision, plus one EVAL: the first EVALSHA
// finds the script missing (NOSCRIPT) and go-redis sends the script itself once.
//
// Redis must then have run EVALSHA 200 times (one of them failed, with NOSCRIPT) and EVAL
// once, and nothing else from the client. Commands a script runs count in INFO commandstats
// too: the script ran once per decision (199 EVALSHA and 1 EVAL), so TIME and GET 200 times
// each, and SET only on the 50 allowed decisions, a denial writing nothing.
func TestRedisOneRoundTripPerDecision(t *testing.T) {
	for _, c := range []struct {
		alg   ratelimit.Algorithm
		limit ratelimit.Limit
	}{
		// one token per 1000 s
		{ratelimit.TokenBucket, ratelimit.Limit{Rate: 1e-3, Burst: 5}},
		// a window of 10⁶ s
		{ratelimit.FixedWindow, ratelimit.Limit{Rate: 5e-6, Burst: 5}},
		// a window of 10⁶ s
		{ratelimit.SlidingWindowCounter, ratelimit.Limit{Rate: 5e-6, Burst: 5}},
	} {
		t.Run(c.alg.String(), func(t *testing.T) { oneRoundTrip(t, c.alg, c.limit) })
	}
}

func oneRoundTrip(t *testing.T, alg ratelimit.Algorithm, limit ratelimit.Limit) {
	srv := redistest.NewServer(t)
	client := newRedisClient(srv.Addr())
	t.Cleanup(func() { client.Close() })
	ctx := context.Background()
	// The connection exists, with its handshake done, before anything is counted.
	require.NoError(t, client.Ping(ctx).Err())
	log := &commandLog{}
	client.AddHook(log)
	// A deadline no loaded machine misses: a call given up on would be counted all the same.
	l, err := distributed.New(client, distributed.WithAlgorithm(alg), distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	_, err = srv.Do("CONFIG", "RESETSTAT")
	require.NoError(t, err)

	const decisions, buckets = 200, 10
	burst := limit.Burst
	keys := ipKeys(buckets)
	allowed := 0
	for i := range decisions {
		res, err := l.Allow(ctx, keys[i%buckets], limit)
		require.NoError(t, err)
		if res.Allowed {
			allowed++
		}
	}
	require.Equal(t, buckets*burst, allowed)

	assert.Equal(t, map[string]int{"evalsha": decisions, "eval": 1}, log.counts(), "commands the client sent")

	stats := commandStats(t, srv)
	// The CONFIG RESETSTAT before the decisions is the only other command, on the test's own
	// connection (INFO is left out too, should a Redis version list the INFO it answers).
	got := map[string]int64{}
	for name, s := range stats {
		got[name] = s.calls
	}
	delete(got, "info")
	delete(got, "config|resetstat")
	assert.Equal(t, map[string]int64{
		"evalsha": decisions,
		"eval":    1,
		"time":    decisions,
		"get":     decisions,
		"set":     int64(buckets * burst),
	}, got, "commands Redis ran, of %v", slices.Sorted(maps.Keys(stats)))
	assert.Equal(t, int64(1), stats["evalsha"].failed, "EVALSHA calls that failed (the first: NOSCRIPT)")
}
