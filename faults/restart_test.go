package faults

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// TestRedisRestartedEmpty: Redis, which keeps nothing on disk (--save "" --appendonly no),
// is restarted in the middle of a load test through the Gin middleware, with a fallback
// Limiter over the Redis backend: every bucket is gone, and starts full again. The load
// goes on until Redis has refused every key again (a burst later). Besides what
// faultRun.report checks (which bounds what Redis admitted of each key by GCRA's bound
// and one burst), Redis admitted every key at least a whole burst since the restart began:
// the restart did forget the buckets, and one burst per key is what it costs. (Counted
// from the restart's beginning, not its end: the new Redis decides while Restart still
// waits for it to answer, and may take part of a key's new burst then. Without the
// restart's forgetting, the ~1.2 s from then on would refill only about 6 of the 10.)
func TestRedisRestartedEmpty(t *testing.T) {
	noLeaks(t)
	server := redistest.NewServer(t)
	s := newStack(t, newClient(t, server.Addr()), true, fallback.WithInstances(2))

	r := runFault(t, s, newService(t, s), newKeys(12, 0), fault{
		inject: func() { server.Restart(t) },
		heal:   func() {},
		settled: func(k tally, healed time.Time) bool {
			return !k.lastDenied.Before(healed) // the new bucket is empty again
		},
	})
	as := r.report(t)
	least := as[0].byRedisSinceFault
	for _, a := range as {
		least = min(least, a.byRedisSinceFault)
		require.GreaterOrEqual(t, a.byRedisSinceFault, keyedLimit.Burst, "requests of a key Redis admitted since the restart began")
	}
	t.Logf("Redis admitted every key at least %d times since the restart began (burst %d)", least, keyedLimit.Burst)
}
