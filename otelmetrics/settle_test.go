package otelmetrics_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
)

// TestSettleSeries: settles and bookings ahead through observe.Wrap, on the real SDK. On a
// local token bucket (1/s, Burst 10) two decisions are settled, 4 to 1 (3 given back) and 2
// to 6 (4 charged past the estimate), and an overrun on a fixed window is refused
// (invalid_input). On a Redis token bucket (one token in 1000 s, Burst 1) two slots are
// booked, now and about 1000 s ahead, their Delays summed in ratelimit.reserve.delay, and
// a third, 2000 s ahead, does not fit a wait of 1500 s. ratelimit.requests counts the two
// decisions only.
func TestSettleSeries(t *testing.T) {
	obs, reader := newObserver(t)
	ctx := context.Background()
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	limiter := observe.Wrap(l, obs, "llm")
	s, ok := ratelimit.As[ratelimit.Settler](limiter)
	require.True(t, ok)
	_, isReserver := ratelimit.As[ratelimit.Reserver](limiter)
	require.False(t, isReserver, "the local backend books no slot ahead, nor does its wrapper")
	tb := ratelimit.Limit{Rate: 1, Burst: 10}
	for _, c := range []struct{ reserved, actual int }{{4, 1}, {2, 6}} {
		res, err := limiter.AllowN(ctx, "team", tb, c.reserved)
		require.NoError(t, err)
		_, err = s.Settle(ctx, "team", tb, res.Charge, c.reserved, c.actual)
		require.NoError(t, err)
	}
	_, err := s.Settle(ctx, "team", ratelimit.Limit{Rate: 1, Burst: 10, Algorithm: ratelimit.FixedWindow}, ratelimit.Charge{}, 0, 1)
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)

	client := redis.NewClient(&redis.Options{Addr: redistest.NewServer(t).Addr()})
	defer client.Close()
	d, err := distributed.New(client)
	require.NoError(t, err)
	defer d.Close()
	r, ok := ratelimit.As[ratelimit.Reserver](observe.Wrap(d, obs, "jobs"))
	require.True(t, ok)
	slow := ratelimit.Limit{Rate: 0.001, Burst: 1}
	var booked time.Duration
	for i, wait := range []time.Duration{time.Hour, time.Hour, 1500 * time.Second} {
		res, err := r.Reserve(ctx, "queue", slow, 1, wait)
		require.NoError(t, err)
		require.Equal(t, i < 2, res.Allowed, "reservation %d", i+1)
		booked += res.Delay
	}
	require.Positive(t, booked, "the second slot is 1000 s after the first")

	c := collect(t, reader)
	assert.Equal(t, map[string]int64{
		"ratelimit.policy=llm,ratelimit.result=allowed":                        2,
		"error.type=invalid_input,ratelimit.policy=llm,ratelimit.result=error": 1,
	}, c.Counts(t, "ratelimit.settles"))
	assert.Equal(t, map[string]int64{
		"ratelimit.policy=llm,ratelimit.settle.direction=overrun": 4,
		"ratelimit.policy=llm,ratelimit.settle.direction=refund":  3,
	}, c.Counts(t, "ratelimit.settle.tokens"))
	assert.Equal(t, map[string]int64{
		"ratelimit.policy=jobs,ratelimit.result=allowed": 2,
		"ratelimit.policy=jobs,ratelimit.result=denied":  1,
	}, c.Counts(t, "ratelimit.reservations"))
	delay, ok := c["ratelimit.reserve.delay"].Data.(metricdata.Sum[float64])
	require.True(t, ok)
	require.Len(t, delay.DataPoints, 1)
	assert.Equal(t, "ratelimit.policy=jobs", attrs(delay.DataPoints[0].Attributes))
	assert.Equal(t, float64(booked.Microseconds())/1e6, delay.DataPoints[0].Value, "the Delays booked")
	assert.Equal(t, "s", c["ratelimit.reserve.delay"].Unit)
	assert.Equal(t, map[string]int64{
		"ratelimit.policy=llm,ratelimit.priority=critical,ratelimit.result=allowed,ratelimit.shadow=false": 2,
	}, c.Counts(t, "ratelimit.requests"))
}
