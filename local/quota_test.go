package local

import (
	"context"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestQuotaSweep: the sweep keeps a quota's bucket while its period has counted anything,
// and drops it once the period has ended, when a new bucket would decide as it does. In
// the bubble the clock starts at 2000-01-01T00:00:00Z: the day in UTC ends 24 h later.
func TestQuotaSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(WithCleanupInterval(time.Hour), WithIdleTimeout(-1))
		defer l.Close()
		day := ratelimit.Quota(1, ratelimit.Period{Unit: ratelimit.Day, Zone: "UTC"})
		_, err := l.Allow(context.Background(), "k", day)
		require.NoError(t, err)
		time.Sleep(23*time.Hour + time.Minute)
		synctest.Wait()
		require.Equal(t, 1, l.Len(), "the day has counted 1 and lasts")
		time.Sleep(time.Hour)
		synctest.Wait()
		require.Equal(t, 0, l.Len(), "the day has ended")
	})
}

// TestQuotaOverflow: at the cap, keys without a bucket share one overflow bucket per
// limit, period included: a day's overflow bucket is not a week's, nor another zone's.
func TestQuotaOverflow(t *testing.T) {
	clock := ratelimittest.NewClock()
	l := New(WithMaxBuckets(64), WithClock(clock.Now), WithCleanupInterval(-1))
	defer l.Close()
	ctx := context.Background()
	hourly := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 1}
	for i := range 2000 { // fill every shard with a drained bucket of another limit
		_, err := l.Allow(ctx, "a"+strconv.Itoa(i), hourly)
		require.NoError(t, err)
	}
	require.Equal(t, 64, l.Len())
	for _, text := range []string{"1/day@UTC", "1/week@UTC", "1/day@Asia/Kolkata"} {
		limit, err := ratelimit.ParseLimit(text)
		require.NoError(t, err)
		res, err := l.Allow(ctx, "b1", limit)
		require.NoError(t, err)
		require.True(t, res.Allowed, text)
		res, err = l.Allow(ctx, "b2", limit)
		require.NoError(t, err)
		require.False(t, res.Allowed, "%s: b2 shares b1's overflow bucket", text)
	}
}

// BenchmarkQuota: a day quota's decision on one hot key, within a period (the state's
// period serves, no calendar arithmetic), beside the fixed window's; and the period
// computed on every decision, as a key's first in a new period does.
func BenchmarkQuota(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		limit ratelimit.Limit
	}{
		{"quota", ratelimit.Quota(1<<30, ratelimit.Period{Unit: ratelimit.Day, Zone: "Europe/Paris"})},
		{"fixed-window", ratelimit.Limit{Rate: float64(1<<30) / 86400, Burst: 1 << 30, Algorithm: ratelimit.FixedWindow}},
	} {
		b.Run(c.name, func(b *testing.B) {
			l := New(WithCleanupInterval(-1))
			defer l.Close()
			b.ReportAllocs()
			for b.Loop() {
				if res, err := l.Allow(ctx, "k", c.limit); err != nil || !res.Allowed {
					b.Fatal(res, err)
				}
			}
		})
	}
	b.Run("bounds", func(b *testing.B) {
		var q quota
		q.period = ratelimit.Period{Unit: ratelimit.Day, Zone: "Europe/Paris"}
		q.loc, _ = time.LoadLocation("Europe/Paris")
		u := time.Now().UnixMicro()
		b.ReportAllocs()
		for b.Loop() {
			q.bounds(u)
		}
	})
}

// TestQuotaNotADefault: a quota's period is its limit's, so CalendarQuota is no limiter's
// default: the limits that name no algorithm are refused, those that name it decided.
func TestQuotaNotADefault(t *testing.T) {
	l := New(WithAlgorithm(ratelimit.CalendarQuota), WithCleanupInterval(-1))
	defer l.Close()
	_, err := l.Allow(context.Background(), "k", ratelimit.PerSecond(1))
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	require.ErrorIs(t, l.ValidateLimit(ratelimit.PerSecond(1)), ratelimit.ErrNotSupported)
	res, err := l.Allow(context.Background(), "k", ratelimit.Quota(1, ratelimit.Period{Unit: ratelimit.Week, Zone: "UTC"}))
	require.NoError(t, err)
	require.True(t, res.Allowed)
}
