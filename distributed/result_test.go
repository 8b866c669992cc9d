package distributed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// TestResultOfClampsRemaining: whatever a script answers, Remaining stays in [0, Burst].
func TestResultOfClampsRemaining(t *testing.T) {
	limit := ratelimit.Limit{Rate: 1, Burst: 3}
	for _, c := range []struct{ remaining, want int64 }{{-7, 0}, {0, 0}, {2, 2}, {3, 3}, {1 << 60, 3}} {
		res := resultOf([]int64{0, c.remaining, 1000, 2000}, limit)
		require.Equal(t, ratelimit.Result{Limit: limit, Remaining: int(c.want), RetryAfter: time.Millisecond, ResetAfter: 2 * time.Millisecond}, res)
	}
}
