package faults

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/lease"
)

// TestLeaseRetryDebitedOnce: a proxy forwards a chunk request to Redis and swallows the
// answer; the instance sends the same request (its id and sequence number) again once the
// network is mended, and Redis answers it from the record without debiting the bucket a
// second time: the bucket's state in Redis is what the first run left, to the byte.
func TestLeaseRetryDebitedOnce(t *testing.T) {
	noLeaks(t)
	server := redistest.NewServer(t)
	proxy := newProxy(t, server.Addr())
	backend, err := distributed.New(newClient(t, proxy.Listen), distributed.WithTimeout(200*time.Millisecond))
	require.NoError(t, err)
	// 10/s, a burst of 1,000 and a target of 1 s: a first chunk of 10 tokens.
	l := lease.New(backend, lease.WithHot(func(string, ratelimit.Limit) bool { return true }),
		lease.WithInstances(1), lease.WithTarget(time.Second), lease.WithLeaseTime(time.Minute))
	t.Cleanup(func() { _ = l.Close() })
	limit := ratelimit.Limit{Rate: 10, Burst: 1000}
	ctx := context.Background()

	// A connection open and the script loaded first: the proxy swallows the handshake's
	// answer too, and a NOSCRIPT.
	_, err = l.Allow(ctx, "warm", limit)
	require.NoError(t, err)
	toxic := `{"name":"drop-replies","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`
	_, err = proxy.Toxics.AddToxicJson(strings.NewReader(toxic))
	require.NoError(t, err)
	_, err = l.Allow(ctx, "k", limit)
	require.ErrorIs(t, err, ratelimit.ErrTimeout, "the reply was swallowed")
	// The request ran: the bucket holds its record and its TAT.
	state := func() any {
		v, err := server.Do("HGETALL", distributed.DefaultPrefix+"k:tl:10:1000")
		require.NoError(t, err)
		return v
	}
	first := state()
	require.Len(t, first, 4, "the TAT and one record")

	require.NoError(t, proxy.Toxics.RemoveToxic(ctx, "drop-replies"))
	res, err := l.Allow(ctx, "k", limit)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
	assert.Equal(t, 9, res.Remaining, "the 10 of the first run's answer, one spent")
	assert.Equal(t, first, state(), "answered again, nothing written")
}
