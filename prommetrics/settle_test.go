package prommetrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/prommetrics"
)

// TestSettleSeries: on a real registry, through observe.Wrap on a local token bucket (1/s,
// Burst 10): two settles, 4 to 1 (3 given back) and 2 to 6 (4 charged past the estimate),
// one refused (an overrun on a fixed window: invalid_input); then two bookings reported
// as a Reserver reports them, 250 ms ahead and none within the wait. The settles are not
// decisions: ratelimit_requests_total counts the two AllowN only.
func TestSettleSeries(t *testing.T) {
	c := prommetrics.New()
	ctx := context.Background()
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	limiter := observe.Wrap(l, c, "llm")
	s, ok := ratelimit.As[ratelimit.Settler](limiter)
	require.True(t, ok)
	tb := ratelimit.Limit{Rate: 1, Burst: 10}
	for _, r := range []struct{ reserved, actual int }{{4, 1}, {2, 6}} {
		res, err := limiter.AllowN(ctx, "team", tb, r.reserved)
		require.NoError(t, err)
		_, err = s.Settle(ctx, "team", tb, res.Charge, r.reserved, r.actual)
		require.NoError(t, err)
	}
	_, err := s.Settle(ctx, "team", ratelimit.Limit{Rate: 1, Burst: 10, Algorithm: ratelimit.FixedWindow}, ratelimit.Charge{}, 0, 1)
	require.ErrorIs(t, err, ratelimit.ErrNotSupported)
	call := observe.Call{Policy: "jobs", Backend: "distributed", Duration: -1}
	observe.ReportReserve(ctx, c, call, tb, 1, ratelimit.Result{Allowed: true, Delay: 250 * time.Millisecond}, nil)
	observe.ReportReserve(ctx, c, call, tb, 1, ratelimit.Result{RetryAfter: time.Second}, nil)

	var got []string
	for _, line := range scrape(t, c) {
		if !strings.HasPrefix(line, "ratelimit_decision_duration") {
			got = append(got, line)
		}
	}
	assert.Equal(t, []string{
		`ratelimit_requests_total{ratelimit_policy="llm",ratelimit_priority="critical",ratelimit_result="allowed",ratelimit_shadow="false"} 2`,
		`ratelimit_reservations_total{ratelimit_policy="jobs",ratelimit_result="allowed"} 1`,
		`ratelimit_reservations_total{ratelimit_policy="jobs",ratelimit_result="denied"} 1`,
		`ratelimit_reserve_delay_seconds_total{ratelimit_policy="jobs"} 0.25`,
		`ratelimit_settle_tokens_total{ratelimit_policy="llm",ratelimit_settle_direction="overrun"} 4`,
		`ratelimit_settle_tokens_total{ratelimit_policy="llm",ratelimit_settle_direction="refund"} 3`,
		`ratelimit_settles_total{error_type="invalid_input",ratelimit_policy="llm",ratelimit_result="error"} 1`,
		`ratelimit_settles_total{ratelimit_policy="llm",ratelimit_result="allowed"} 2`,
	}, got)
}
