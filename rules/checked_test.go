package rules_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/rules"
)

// policyOf is a rules file of one policy, login, of limit text, the default policy.
func policyOf(version, limit string) []byte {
	return []byte(`{"version": "` + version + `", "default": "login", "policies": {"login": {"limits": ["` + limit + `"]}}}`)
}

// Every set is checked against the limiter of each middleware that decides it, as it comes
// into force, without WithValidator: a limit one of them refuses is refused at load, and
// the set in force stays; a middleware is not built on a set in force that it cannot
// decide. 20000/h, a limit of the limiter's own algorithm, passes Limit.Validate and a
// token bucket, but is above MaxLogBurst for a limiter whose default is the sliding log
// (here a Redis backend); 10001/h sliding-log is above it on both.
func TestRulesCheckedByTheirMiddlewares(t *testing.T) {
	loc := local.New(local.WithClock(func() time.Time { return time.Unix(0, 0) }))
	t.Cleanup(func() { _ = loc.Close() })
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // New does not dial
	t.Cleanup(func() { _ = client.Close() })
	red, err := distributed.New(client, distributed.WithAlgorithm(ratelimit.SlidingWindowLog))
	require.NoError(t, err)
	t.Cleanup(func() { _ = red.Close() })

	live := rules.New(nil)
	require.NoError(t, live.Load("v1.json", policyOf("1", "2/min")))
	httpmw.New(loc, httpmw.WithRules(live))
	require.NoError(t, live.Load("v2.json", policyOf("2", "20000/h")), "the local backend takes it")
	require.NoError(t, live.Load("v3.json", policyOf("3", "2/min")))

	httpmw.New(red, httpmw.WithRules(live)) // a second middleware, on Redis
	err = live.Load("v4.json", policyOf("4", "20000/h"))
	require.ErrorIs(t, err, rules.ErrInvalid)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	assert.Contains(t, err.Error(), `v4.json: httpmw: policy "login": limit 20000/h keep-usage: `)
	err = live.Load("v5.json", policyOf("5", "10001/h sliding-log"))
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	assert.Len(t, multiple(err), 2, "both middlewares refuse it")
	assert.Equal(t, "3", live.Set().Version, "the set in force stays")

	// Rules no middleware takes check only what Limit.Validate checks; a middleware is not
	// built on a set in force it cannot decide.
	alone := rules.New(nil)
	require.NoError(t, alone.Load("v4.json", policyOf("4", "20000/h")))
	assert.PanicsWithValue(t, `httpmw: New: WithRules: the set in force: httpmw: policy "login": limit 20000/h keep-usage: `+
		`ratelimit: invalid limit: burst 20000 is above the sliding window log's maximum of 10000`, func() { httpmw.New(red, httpmw.WithRules(alone)) })
	httpmw.New(loc, httpmw.WithRules(alone))
}

// multiple returns the errors err joins.
func multiple(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
