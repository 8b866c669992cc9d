package args

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// TestCheckKeep: KeepUsage with a warm-up is not supported, nor a token bucket above
// MaxKeepRate; every other limit with it, and every limit without it, passes.
func TestCheckKeep(t *testing.T) {
	keep := ratelimit.Limit{Rate: 10, Burst: 10, KeepUsage: true}
	require.NoError(t, CheckKeep(ratelimit.TokenBucket, keep))
	warm := keep
	warm.Warmup = time.Second
	require.ErrorIs(t, CheckKeep(ratelimit.TokenBucket, warm), ratelimit.ErrNotSupported)
	require.ErrorIs(t, CheckAlgorithm(ratelimit.TokenBucket, warm), ratelimit.ErrNotSupported)
	fast := ratelimit.Limit{Rate: 2e6, Burst: 1e6, KeepUsage: true}
	require.ErrorIs(t, CheckKeep(ratelimit.TokenBucket, fast), ratelimit.ErrInvalidArgument)
	require.NoError(t, CheckKeep(ratelimit.FixedWindow, fast))
	fast.KeepUsage = false
	require.NoError(t, CheckKeep(ratelimit.TokenBucket, fast))
}

// TestSameKeep: two limits with KeepUsage share a bucket when their algorithm is the same,
// and for the windows whose counts carry, their window's length too.
func TestSameKeep(t *testing.T) {
	k := func(a ratelimit.Algorithm, rate float64, burst int) ratelimit.Limit {
		return ratelimit.Limit{Rate: rate, Burst: burst, Algorithm: a, KeepUsage: true}
	}
	assert.True(t, SameKeep(k(ratelimit.TokenBucket, 1, 5), k(ratelimit.TokenBucket, 3, 2)))
	assert.True(t, SameKeep(k(ratelimit.SlidingWindowLog, 1, 5), k(ratelimit.SlidingWindowLog, 3, 2)))
	assert.False(t, SameKeep(k(ratelimit.TokenBucket, 1, 5), k(ratelimit.LeakyBucket, 1, 5)))
	assert.True(t, SameKeep(k(ratelimit.FixedWindow, 1, 10), k(ratelimit.FixedWindow, 2, 20)))
	assert.False(t, SameKeep(k(ratelimit.FixedWindow, 1, 10), k(ratelimit.FixedWindow, 1, 20)))
	plain := k(ratelimit.TokenBucket, 1, 5)
	plain.KeepUsage = false
	assert.False(t, SameKeep(plain, k(ratelimit.TokenBucket, 1, 5)))
}
