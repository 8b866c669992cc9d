package args

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

func TestCheck(t *testing.T) {
	ok := ratelimit.Limit{Rate: 1, Burst: 3}
	cases := []struct {
		key   string
		limit ratelimit.Limit
		n     int
		want  error
		text  string
	}{
		{"k", ok, 1, nil, ""},
		{"k", ok, 3, nil, ""},
		// The key is checked first, then the limit, then the cost.
		{"", ratelimit.Limit{}, 0, ratelimit.ErrInvalidArgument, "ratelimit: empty key"},
		{"k", ratelimit.Limit{Rate: math.NaN(), Burst: 1}, 0, ratelimit.ErrInvalidArgument,
			"ratelimit: invalid limit: rate NaN is not a finite number greater than zero"},
		{"k", ok, 0, ratelimit.ErrInvalidArgument, "ratelimit: invalid cost: n = 0"},
		{"k", ok, 4, ratelimit.ErrExceedsBurst, "ratelimit: cost exceeds burst: n = 4, burst 3"},
	}
	for _, c := range cases {
		err := Check(c.key, c.limit, c.n)
		if c.want == nil {
			assert.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, c.want)
		assert.EqualError(t, err, c.text)
	}
}

func TestReserve(t *testing.T) {
	ten := ratelimit.Limit{Rate: 1, Burst: 10}
	var defaults priority.Reserves // 1 token kept from Normal, 5 from Sheddable
	cases := []struct {
		r    priority.Reserves
		p    priority.Level
		n    int
		want int
		text string
	}{
		{defaults, priority.Critical, 10, 0, ""},
		{defaults, priority.Normal, 9, 1, ""},
		{defaults, priority.Normal, 10, 1, "ratelimit: cost exceeds burst: n = 10, burst 10 less the 1 tokens kept back from normal requests"},
		{defaults, priority.Sheddable, 5, 5, ""},
		{defaults, priority.Sheddable, 6, 5, "ratelimit: cost exceeds burst: n = 6, burst 10 less the 5 tokens kept back from sheddable requests"},
		{priority.Reserves{Normal: -1, Sheddable: -1}, priority.Sheddable, 10, 0, ""},
	}
	for _, c := range cases {
		got, err := Reserve(c.r, c.p, ten, c.n)
		assert.Equal(t, c.want, got, "%v n=%d", c.p, c.n)
		if c.text == "" {
			assert.NoError(t, err)
			continue
		}
		require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
		assert.EqualError(t, err, c.text)
	}
}

func TestWindow(t *testing.T) {
	cases := []struct {
		limit ratelimit.Limit
		want  int64
	}{
		{ratelimit.PerSecond(1), 1_000_000},
		{ratelimit.PerMinute(7), 60_000_000}, // 7 / (7/60) is not exactly 60 in float64
		{ratelimit.PerHour(100), 3_600_000_000},
		{ratelimit.Limit{Rate: 3, Burst: 1}, 333_333},
		{ratelimit.Limit{Rate: 1e6, Burst: 1}, 1},
		{ratelimit.Limit{Rate: 2e6, Burst: 1}, 1},           // 0.5 µs rounds to 1
		{ratelimit.Limit{Rate: 1e-6, Burst: 9007}, 9007e12}, // just below 2^53
	}
	for _, c := range cases {
		got, err := Window(c.limit)
		require.NoError(t, err, "%v", c.limit)
		assert.Equal(t, c.want, got, "%v", c.limit)
	}
	for _, bad := range []ratelimit.Limit{
		{Rate: 3e6, Burst: 1},     // 0.33 µs
		{Rate: 1e-6, Burst: 9008}, // just above 2^53 µs
	} {
		_, err := Window(bad)
		require.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "%v", bad)
	}
}

// TestBounds pins the bounds to the root package's own, which it states in words and checks
// in Limit.Validate: a Burst of MaxBurst and a Warmup of MaxWarmup are valid, one more is not.
func TestBounds(t *testing.T) {
	at := ratelimit.Limit{Rate: 1, Burst: MaxBurst, Warmup: MaxWarmup}
	require.NoError(t, at.Validate())
	over := at
	over.Burst++
	require.ErrorIs(t, over.Validate(), ratelimit.ErrInvalidArgument)
	over = at
	over.Warmup += time.Microsecond
	require.ErrorIs(t, over.Validate(), ratelimit.ErrInvalidArgument)
	quota := ratelimit.Quota(MaxBurst, ratelimit.Period{Unit: ratelimit.Day, Zone: "UTC"})
	require.NoError(t, quota.Validate())
	quota.Burst++
	require.ErrorIs(t, quota.Validate(), ratelimit.ErrInvalidArgument)
	ok := ratelimit.PerSecond(1)
	require.ErrorIs(t, Check(strings.Repeat("k", MaxKeyLen+1), ok, 1), ErrKeyTooLong)
	require.NoError(t, Check(strings.Repeat("k", MaxKeyLen), ok, 1))
}
