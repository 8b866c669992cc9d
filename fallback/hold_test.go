package fallback_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestHoldOnThePrimary: a fallback whose primary holds (the Redis backend) holds too, on
// the primary, and its Settle settles the hold there: five an hour, a hold of 3 leaves 2,
// settled to 1 it leaves 4 (a peek for one: 3). While the primary is unreachable the
// secondary decides by AllowN, its charge its own, which Settle settles there. A TTL under
// 1 µs is refused; a fallback whose parts cannot settle has no Settler.
func TestHoldOnThePrimary(t *testing.T) {
	ctx := context.Background()
	limit := fiveAnHour
	newRedis := func(addr string) *distributed.Limiter {
		client := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		t.Cleanup(func() { _ = client.Close() })
		l, err := distributed.New(client, distributed.WithTimeout(10*time.Second))
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	secondary := local.New(local.WithCleanupInterval(0))
	t.Cleanup(func() { _ = secondary.Close() })

	primary := newRedis(redistest.NewServer(t).Addr())
	l := fallback.New(primary, secondary)
	h, ok := ratelimit.As[ratelimit.Settler](l)
	require.True(t, ok)
	res, err := h.Hold(ctx, "k", limit, 3, time.Minute)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, 2, res.Remaining)
	require.True(t, strings.HasPrefix(res.Charge.Part, "primary/hold:"), res.Charge.Part)
	settled, err := settlerOf(t, l).Settle(ctx, "k", limit, res.Charge, 3, 1)
	require.NoError(t, err)
	require.Equal(t, 3, settled.Remaining)
	peek, err := primary.Peek(ctx, "k", limit, 1)
	require.NoError(t, err)
	require.Equal(t, 3, peek.Remaining, "settled on the primary")
	_, err = h.Hold(ctx, "k", limit, 1, 0)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := ln.Addr().String()
	require.NoError(t, ln.Close())
	degraded := fallback.New(newRedis(dead), secondary)
	h, ok = ratelimit.As[ratelimit.Settler](degraded)
	require.True(t, ok)
	res, err = h.Hold(ctx, "d", limit, 3, time.Minute)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Equal(t, "secondary", res.Charge.Part)
	_, err = settlerOf(t, degraded).Settle(ctx, "d", limit, res.Charge, 3, 1)
	require.NoError(t, err)
	require.Equal(t, 4, remaining(t, secondary, "d"), "settled on the secondary")

	_, ok = ratelimit.As[ratelimit.Settler](fallback.New(&ratelimittest.Stub{}, secondary))
	require.False(t, ok)
}
