package args

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// TestValidIsCheck: Valid says yes exactly when Check returns nil, over every combination of
// keys, rates, bursts and costs at and around each bound.
func TestValidIsCheck(t *testing.T) {
	keys := []string{"", "k", strings.Repeat("k", MaxKeyLen), strings.Repeat("k", MaxKeyLen+1)}
	rates := []float64{math.NaN(), math.Inf(-1), -1, 0, math.SmallestNonzeroFloat64, 1, math.MaxFloat64, math.Inf(1)}
	bursts := []int{math.MinInt, -1, 0, 1, 2, MaxBurst, MaxBurst + 1, math.MaxInt}
	costs := []int{math.MinInt, -1, 0, 1, 2, MaxBurst, MaxBurst + 1, math.MaxInt}
	warmups := []time.Duration{math.MinInt64, -time.Microsecond, -1, 0, 1, 999, time.Microsecond,
		time.Hour + 1, time.Hour, MaxWarmup, MaxWarmup + 1,
		MaxWarmup + time.Microsecond, math.MaxInt64}
	for _, key := range keys {
		for _, rate := range rates {
			for _, burst := range bursts {
				for _, n := range costs {
					for _, warmup := range warmups {
						limit := ratelimit.Limit{Rate: rate, Burst: burst, Warmup: warmup}
						require.Equal(t, Check(key, limit, n) == nil, Valid(key, limit, n),
							"key of %d bytes, %v, n = %d", len(key), limit, n)
					}
				}
			}
		}
	}
}
