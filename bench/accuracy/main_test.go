package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// TestSimulate runs a short trace and checks what holds for any trace: every request is
// counted once, the counter never admits 2·Burst within one window, and the same seed gives
// the same report.
func TestSimulate(t *testing.T) {
	cfg := config{limit: ratelimit.PerMinute(60), mix: mixes[0], clients: 200, requests: 100_000, seed: 3}
	r, err := simulate(cfg)
	require.NoError(t, err)
	total := 0
	for _, c := range r.byClass {
		total += c.total()
	}
	assert.Equal(t, cfg.requests, total)
	assert.Greater(t, r.busiest, cfg.limit.Burst/2)
	assert.Less(t, r.busiest, 2*cfg.limit.Burst)
	again, err := simulate(cfg)
	require.NoError(t, err)
	assert.Equal(t, r, again)
}
