package bench

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// TestSketchSeedTimeline plays the seed document's timeline (rate 1/s, burst 2) on the
// sketch, with the time set through allowAt, and checks every field of every Result.
func TestSketchSeedTimeline(t *testing.T) {
	l := newSketchLimiter()
	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	steps := []struct {
		name string
		at   time.Duration
		want ratelimit.Result
	}{
		{"A", 100 * time.Millisecond, ratelimit.Result{Allowed: true, Limit: limit, Remaining: 1, ResetAfter: time.Second}},
		{"B", 100 * time.Millisecond, ratelimit.Result{Allowed: true, Limit: limit, Remaining: 0, ResetAfter: 2 * time.Second}},
		{"C", 100 * time.Millisecond, ratelimit.Result{Allowed: false, Limit: limit, Remaining: 0, RetryAfter: time.Second, ResetAfter: 2 * time.Second}},
		{"D", 1500 * time.Millisecond, ratelimit.Result{Allowed: true, Limit: limit, Remaining: 0, ResetAfter: 1600 * time.Millisecond}},
	}
	for _, s := range steps {
		got, err := l.allowAt(int64(s.at), "seed", limit, 1)
		require.NoError(t, err, s.name)
		require.Equal(t, s.want, got, s.name)
	}
	require.Equal(t, 1, l.Len())

	// Another limit on the same key is a fresh, full bucket, chained beside the first.
	other := ratelimit.Limit{Rate: 1, Burst: 1}
	got, err := l.allowAt(int64(1500*time.Millisecond), "seed", other, 1)
	require.NoError(t, err)
	require.Equal(t, ratelimit.Result{Allowed: true, Limit: other, ResetAfter: time.Second}, got)
	require.Equal(t, 2, l.Len())
}

// TestSketchConcurrent starts 64 goroutines on one bucket at one instant: exactly Burst of
// them must be admitted, and the admitted ones must have seen Remaining Burst−1, …, 0, each
// once (every CAS that won moved tat by exactly one interval).
func TestSketchConcurrent(t *testing.T) {
	l := newSketchLimiter()
	limit := ratelimit.Limit{Rate: 1, Burst: 10}
	const goroutines = 64
	const now = int64(5 * time.Second)
	var (
		admitted  atomic.Int64
		remaining [10]atomic.Int64 // how many admissions reported each Remaining
		start     sync.WaitGroup
		wg        sync.WaitGroup
	)
	start.Add(1)
	for range goroutines {
		wg.Go(func() {
			start.Wait()
			res, err := l.allowAt(now, "hot", limit, 1)
			if err != nil {
				t.Error(err)
				return
			}
			if res.Allowed {
				admitted.Add(1)
				remaining[res.Remaining].Add(1)
			} else if res.RetryAfter <= 0 {
				t.Errorf("denied with RetryAfter %v", res.RetryAfter)
			}
		})
	}
	start.Done()
	wg.Wait()
	require.Equal(t, int64(limit.Burst), admitted.Load())
	for r := range remaining {
		require.Equal(t, int64(1), remaining[r].Load(), "admissions reporting Remaining %d", r)
	}
}

// TestSketchShardSize checks the padding: one shard fills exactly two 64-byte cache lines.
func TestSketchShardSize(t *testing.T) {
	require.Equal(t, uintptr(128), unsafe.Sizeof(sketchShard{}))
}
