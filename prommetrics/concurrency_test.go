package prommetrics_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/prommetrics"
)

// TestConcurrency: a local.Limiter's permits, aggregated over its keys under the
// policy name given, read at each scrape of a real registry; a key never appears.
func TestConcurrency(t *testing.T) {
	l := local.New(local.WithAdaptive(concurrency.AIMD{Initial: 4, Backoff: 0.5}))
	defer l.Close()
	c := prommetrics.New(prommetrics.WithConcurrency("exports", l))

	// No key yet: no limit in force.
	assert.Equal(t, []string{
		`ratelimit_concurrency_in_flight{ratelimit_policy="exports"} 0`,
		`ratelimit_concurrency_keys{ratelimit_policy="exports"} 0`,
		`ratelimit_concurrency_waiting{ratelimit_policy="exports"} 0`,
	}, scrape(t, c))

	// tenant-a drops once: its limit falls from 4 to ⌊4 · 0.5⌋ = 2; tenant-b holds one
	// permit under 4.
	p, err := l.Acquire(t.Context(), "tenant-a", 100)
	require.NoError(t, err)
	p.ReleaseWith(concurrency.Dropped)
	q, err := l.Acquire(t.Context(), "tenant-b", 100)
	require.NoError(t, err)
	defer q.Release()
	assert.Equal(t, []string{
		`ratelimit_concurrency_in_flight{ratelimit_policy="exports"} 1`,
		`ratelimit_concurrency_keys{ratelimit_policy="exports"} 2`,
		`ratelimit_concurrency_limit_max{ratelimit_policy="exports"} 4`,
		`ratelimit_concurrency_limit_min{ratelimit_policy="exports"} 2`,
		`ratelimit_concurrency_waiting{ratelimit_policy="exports"} 0`,
	}, scrape(t, c))
}

func TestConcurrencyTwicePerPolicy(t *testing.T) {
	l := local.New()
	defer l.Close()
	assert.PanicsWithValue(t, `prommetrics: New: WithConcurrency given twice for policy "exports"`, func() {
		prommetrics.New(prommetrics.WithConcurrency("exports", l), prommetrics.WithConcurrency("exports", l))
	})
}
