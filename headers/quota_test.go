package headers_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/headers"
	"github.com/sluice-go/ratelimit/local"
)

// TestQuotaFields: a calendar quota's headers on the day Paris moves to summer time, 23
// hours long: the policy states a day, 86400 s; the reset and Retry-After count to the
// real midnight, 23 h = 82800 s from the day's start.
func TestQuotaFields(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	require.NoError(t, err)
	now := time.Date(2026, time.March, 29, 0, 0, 0, 0, paris)
	l := local.New(local.WithClock(func() time.Time { return now }))
	defer l.Close()
	limit, err := ratelimit.ParseLimit("2/day@Europe/Paris")
	require.NoError(t, err)
	res, err := l.AllowN(context.Background(), "k", limit, 2)
	require.NoError(t, err)
	assert.Equal(t, []headers.Field{
		{"X-RateLimit-Limit", "2"}, {"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", "82800"},
		{"RateLimit-Policy", `"plan";q=2;w=86400`}, {"RateLimit", `"plan";r=0;t=82800`},
	}, headers.Fields(headers.StyleBoth, "plan", res))
	now = now.Add(time.Hour) // 01:00 +01:00, 22 hours before midnight
	res, err = l.Allow(context.Background(), "k", limit)
	require.NoError(t, err)
	assert.Equal(t, []headers.Field{
		{"Retry-After", "79200"},
		{"X-RateLimit-Limit", "2"}, {"X-RateLimit-Remaining", "0"}, {"X-RateLimit-Reset", "79200"},
		{"RateLimit-Policy", `"plan";q=2;w=86400`}, {"RateLimit", `"plan";r=0;t=79200`},
	}, headers.Fields(headers.StyleBoth, "plan", res))
}
