package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// partitionFor is how long TestPartition keeps the network cut.
const partitionFor = time.Second

// partition cuts the network between p's clients and Redis without either side learning
// of it: a timeout toxic with a timeout of 0 on each direction swallows every byte and
// closes no connection, as a dropped route or a firewall that drops packets does. New
// connections are accepted, and their handshakes go unanswered.
func partition(t *testing.T, p *toxiproxy.Proxy) {
	t.Helper()
	for _, stream := range []string{"upstream", "downstream"} {
		toxic := `{"name":"cut-` + stream + `","type":"timeout","stream":"` + stream + `","attributes":{"timeout":0}}`
		_, err := p.Toxics.AddToxicJson(strings.NewReader(toxic))
		require.NoError(t, err)
	}
}

// mend removes the toxics of partition. toxiproxy then closes the connections that were
// open through them (their streams lost bytes): the clients open new ones.
func mend(t *testing.T, p *toxiproxy.Proxy) {
	t.Helper()
	for _, stream := range []string{"upstream", "downstream"} {
		require.NoError(t, p.Toxics.RemoveToxic(context.Background(), "cut-"+stream))
	}
}

// partitionSlack is what a decision may take beyond the primary's deadline while the
// network is cut, not counting the time the process was kept from running: the local
// decision after the deadline, and the scheduling of eight clients and the server on a
// loaded two-core machine under the race detector.
const partitionSlack = 2 * distributed.DefaultTimeout

// TestPartition: the network between the service and Redis is cut for a second (partition)
// in the middle of a load test through the Gin middleware, with a fallback Limiter over
// the Redis backend, then mended. Besides what faultRun.report checks:
//
//   - no decision takes longer than the primary's deadline and partitionSlack, not
//     counting stalls: go-redis's own timeouts (5 s, retried) never show;
//   - Redis decides again, less stalls, before go-redis's own dial timeout (5 s) has passed
//     since the network was mended: through the breaker's probes and go-redis's re-dials
//     (once a second after PoolSize failed dials, see TestGinSaturatedPool), not by waiting
//     out a timeout. It takes about a second on a quiet machine; on one so loaded that calls
//     miss the primary's deadline the breaker opens again, and recovery takes longer;
//   - Redis lost no charge, and took none twice: every command sent during the partition
//     was swallowed, never run.
func TestPartition(t *testing.T) {
	noLeaks(t)
	server := redistest.NewServer(t)
	proxy := newProxy(t, server.Addr())
	client := newClient(t, proxy.Listen)
	s := newStack(t, client, true, fallback.WithInstances(2))

	r := runFault(t, s, newService(t, s), newKeys(12, 12), fault{
		inject: func() { partition(t, proxy) },
		heal: func() {
			time.Sleep(partitionFor) // real time: the load runs on while the network is cut
			mend(t, proxy)
		},
		opens: true,
	})
	r.report(t)

	lat := r.latencies(r.injected, r.healed)
	require.NotEmpty(t, lat, "decisions while the network was cut")
	slowest := lat[len(lat)-1]
	t.Logf("decisions while the network was cut, less stalls: p50 %v p99 %v max %v",
		lat[len(lat)/2].Round(time.Microsecond), lat[(len(lat)-1)*99/100].Round(time.Microsecond), slowest.Round(time.Microsecond))
	require.LessOrEqual(t, slowest, distributed.DefaultTimeout+partitionSlack, "the slowest decision while the network was cut, less stalls")
	lost := r.stalled.within(r.healed, r.recovered)
	require.LessOrEqual(t, r.recovered.Sub(r.healed)-lost, 5*time.Second, "Redis deciding again after the network was mended")

	c := r.charges(t, client, true)
	t.Logf("counter keys: %d charges acknowledged, %d held by Redis, %d calls failed", c.acked, c.stored, c.failed)
	require.Zero(t, c.forgotten, "charges acknowledged that Redis does not hold")
}
