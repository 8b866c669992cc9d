package rules_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/rules"
)

// TestQuotaPolicy: a policy's limits may be calendar quotas, beside rate limits; a zone
// the database lacks is a mistake of the file, found at load.
func TestQuotaPolicy(t *testing.T) {
	live := rules.New(registry)
	require.NoError(t, live.Load("rules.json", []byte(`{
  "default": "plan",
  "policies": {"plan": {"limits": ["10/s", "10000/day@Europe/Paris", "1000000/month@UTC anchor 15"], "key": "user"}}
}`)))
	req := httptest.NewRequest(http.MethodGet, "/items", nil)
	req.Header.Set("X-User", "42")
	day := ratelimit.Quota(10000, ratelimit.Period{Unit: ratelimit.Day, Zone: "Europe/Paris"})
	month := ratelimit.Quota(1_000_000, ratelimit.Period{Unit: ratelimit.Month, Anchor: 15, Zone: "UTC"})
	assert.Equal(t, []ratelimit.Request{
		{Key: "user:42", Limit: kept(ratelimit.PerSecond(10)), Name: "plan"},
		{Key: "user:42", Limit: kept(day), Name: "plan"},
		{Key: "user:42", Limit: kept(month), Name: "plan"},
	}, live.Set().AppendLimits(nil, rules.FromHTTP(req, "")))

	err := live.Load("rules.json", []byte(`{"default": "plan", "policies": {"plan": {"limits": ["1/day@Mars/Olympus"], "key": "user"}}}`))
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
}
