package distributed_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestQuotaKeyLayout pins a quota's key, its value ("start:end:count" in Unix µs) and its
// expiry, with the period's end.
func TestQuotaKeyLayout(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock() // 2026-01-01T00:00:00Z, 01:00 in Paris
	l, err := distributed.New(newClient(t, server.Addr()), distributed.WithClock(clock.Now), distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)
	ctx := context.Background()
	month, err := ratelimit.ParseLimit("3/month@Europe/Paris anchor 15")
	require.NoError(t, err)
	res, err := l.AllowN(ctx, "user:42", month, 2)
	require.NoError(t, err)
	// From 2025-12-15 00:00 +01:00 to 2026-01-15 00:00 +01:00: 14 days less an hour left.
	left := 14*24*time.Hour - time.Hour
	require.Equal(t, ratelimit.Result{Allowed: true, Limit: month, Remaining: 1, ResetAfter: left,
		Charge: ratelimit.Charge{At: clock.Now()}}, res)

	const key = "ratelimit:user:42:cq:0:3:month+15@Europe/Paris"
	got, err := server.Do("GET", key)
	require.NoError(t, err)
	start := time.Date(2025, 12, 14, 23, 0, 0, 0, time.UTC).UnixMicro()
	end := time.Date(2026, 1, 14, 23, 0, 0, 0, time.UTC).UnixMicro()
	assert.Equal(t, formatPeriod(start, end, 2), got)
	ttl, err := server.Do("PTTL", key)
	require.NoError(t, err)
	assert.InDelta(t, (left + time.Hour).Milliseconds(), ttl, 60_000, "expires with its period, and the test clock's hour")

	// A denial writes nothing; a week's key is another.
	res, err = l.AllowN(ctx, "user:42", month, 2)
	require.NoError(t, err)
	require.False(t, res.Allowed)
	got, err = server.Do("GET", key)
	require.NoError(t, err)
	assert.Equal(t, formatPeriod(start, end, 2), got)
	week, err := ratelimit.ParseLimit("1/2week@UTC")
	require.NoError(t, err)
	_, err = l.Allow(ctx, "user:42", week)
	require.NoError(t, err)
	_, err = server.Do("GET", "ratelimit:user:42:cq:0:1:2week@UTC")
	require.NoError(t, err)
}

func formatPeriod(start, end, count int64) string { return fmt.Sprintf("%d:%d:%d", start, end, count) }

// TestQuotaRedisClock decides on Redis TIME while the application's clock is off: by less
// than a period, the script still finds the period that holds Redis's time among the three
// it is sent, and ResetAfter runs, exactly, from the decision's instant (Charge.At, read
// from Redis) to the next midnight in UTC; by more, it refuses with an error, having
// written nothing. On a node and on a Cluster.
func TestQuotaRedisClock(t *testing.T) {
	node := newClient(t, redistest.NewServer(t).Addr())
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: redistest.NewCluster(t).Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cluster.Close() })
	for name, client := range map[string]redis.Scripter{"node": node, "cluster": cluster} {
		t.Run(name, func(t *testing.T) { quotaRedisClock(t, client) })
	}
}

func quotaRedisClock(t *testing.T, client redis.Scripter) {
	ctx := context.Background()
	day, err := ratelimit.ParseLimit("5/day@UTC")
	require.NoError(t, err)
	for _, skew := range []time.Duration{0, -23 * time.Hour, 23 * time.Hour, -time.Second, time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			l, err := distributed.New(client, distributed.WithPrefix(uniquePrefix()), distributed.WithTimeout(10*time.Second))
			require.NoError(t, err)
			distributed.SetAppClock(l, func() time.Time { return time.Now().Add(skew) })
			for i := range 5 {
				res, err := l.Allow(ctx, "k", day)
				require.NoError(t, err)
				require.True(t, res.Allowed)
				at := res.Charge.At
				next := at.Truncate(24 * time.Hour).Add(24 * time.Hour)
				require.Equal(t, next.Sub(at), res.ResetAfter, "request %d at %v", i, at)
				if next.Sub(at) < 10*time.Second {
					t.Skip("a midnight in UTC came by during the test")
				}
			}
			res, err := l.Allow(ctx, "k", day)
			require.NoError(t, err)
			require.False(t, res.Allowed)
		})
	}
	for _, skew := range []time.Duration{49 * time.Hour, -49 * time.Hour} {
		l, err := distributed.New(client, distributed.WithPrefix(uniquePrefix()), distributed.WithTimeout(10*time.Second))
		require.NoError(t, err)
		distributed.SetAppClock(l, func() time.Time { return time.Now().Add(skew) })
		res, err := l.Allow(ctx, "k", day)
		require.ErrorContains(t, err, "CLOCK", "off by %v, more than a period", skew)
		require.Equal(t, ratelimit.Result{Limit: day}, res)
	}
}

// TestQuotaFirstWriterPeriod: a stored period that holds now is the bucket's, whatever
// the client computes (an outdated time zone database, say): clients that disagree share
// the first writer's period until it ends, and never zero each other's counts.
func TestQuotaFirstWriterPeriod(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock() // 2026-01-01T00:00:00Z
	l, err := distributed.New(newClient(t, server.Addr()), distributed.WithClock(clock.Now), distributed.WithTimeout(10*time.Second))
	require.NoError(t, err)
	ctx := context.Background()
	day, err := ratelimit.ParseLimit("3/day@UTC")
	require.NoError(t, err)
	// Another client's database put this day an hour earlier, and it has counted 2.
	start := time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC).UnixMicro()
	end := time.Date(2026, 1, 1, 23, 0, 0, 0, time.UTC).UnixMicro()
	_, err = server.Do("SET", "ratelimit:k:cq:0:3:day@UTC", formatPeriod(start, end, 2))
	require.NoError(t, err)
	res, err := l.Allow(ctx, "k", day)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Result{Allowed: true, Limit: day, ResetAfter: 23 * time.Hour,
		Charge: ratelimit.Charge{At: clock.Now()}}, res)
	clock.Advance(23 * time.Hour) // that period has ended: this client's day, from zero
	res, err = l.Allow(ctx, "k", day)
	require.NoError(t, err)
	assert.Equal(t, ratelimit.Result{Allowed: true, Limit: day, Remaining: 2, ResetAfter: time.Hour,
		Charge: ratelimit.Charge{At: clock.Now()}}, res)
}

// BenchmarkQuota: a day quota's decision on one hot key on a real Redis, beside the fixed
// window's: the same three calls, plus the three periods the client computes and sends.
func BenchmarkQuota(b *testing.B) {
	server := redistest.NewServer(b)
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		limit ratelimit.Limit
	}{
		{"quota", ratelimit.Quota(1<<30, ratelimit.Period{Unit: ratelimit.Day, Zone: "Europe/Paris"})},
		{"fixed-window", ratelimit.Limit{Rate: float64(1<<30) / 86400, Burst: 1 << 30, Algorithm: ratelimit.FixedWindow}},
	} {
		b.Run(c.name, func(b *testing.B) {
			l, err := distributed.New(newClient(b, server.Addr()), distributed.WithPrefix(uniquePrefix()))
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				if res, err := l.Allow(ctx, "k", c.limit); err != nil || !res.Allowed {
					b.Fatal(res, err)
				}
			}
		})
	}
}

// TestQuotaNotADefault: as on the local backend, CalendarQuota is no limiter's default.
func TestQuotaNotADefault(t *testing.T) {
	server := redistest.NewServer(t)
	l := newLimiter(t, newClient(t, server.Addr()), ratelimittest.NewClock(), distributed.WithAlgorithm(ratelimit.CalendarQuota))
	_, err := l.Allow(context.Background(), "k", ratelimit.PerSecond(1))
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	res, err := l.Allow(context.Background(), "k", ratelimit.Quota(1, ratelimit.Period{Unit: ratelimit.Week, Zone: "UTC"}))
	require.NoError(t, err)
	require.True(t, res.Allowed)
}
