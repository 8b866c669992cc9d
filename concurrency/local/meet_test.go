package local_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/local"
)

// TestAdaptiveMeetsQueue: a waiter is served only under the adaptive limit in force, and
// in the queue's order, whichever order it is.
func TestAdaptiveMeetsQueue(t *testing.T) {
	for _, tc := range []struct {
		order local.Order
		want  []string // the grants after the limit falls to 1 and rises to 2
	}{
		{local.OldestFirst, []string{"w0", "w1"}},
		{local.NewestFirst, []string{"w1", "w0"}},
	} {
		t.Run(tc.order.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := local.New(
					local.WithQueue(10, tc.order),
					local.WithAdaptive(concurrency.AIMD{Initial: 2}),
				)
				defer l.Close()
				h0, err := l.Acquire(t.Context(), "k", 10)
				require.NoError(t, err)
				h1, err := l.Acquire(t.Context(), "k", 10)
				require.NoError(t, err)
				out := make(chan string, 2)
				enqueue(t, l, t.Context(), "k", 10, "w0", out)
				enqueue(t, l, t.Context(), "k", 10, "w1", out)

				// A drop: the limit falls to ⌊2 · 0.9⌋ = 1, below Min (1): 1. One holder
				// is left, so nobody is served.
				h0.ReleaseWith(concurrency.Dropped)
				synctest.Wait()
				assert.Empty(t, out)
				limit, _ := l.Limit("k")
				assert.Equal(t, 1, limit)

				// The last old holder leaves: one waiter is served, as the order says; it
				// succeeds with the limit in use, which adds 1 (a limit's worth of
				// successes after a drop is 1), and the other is served too.
				h1.ReleaseWith(concurrency.Ignored)
				assert.Equal(t, tc.want[0], <-out)
				assert.Equal(t, tc.want[1], <-out)
				limit, _ = l.Limit("k")
				assert.Equal(t, 2, limit)
			})
		})
	}
}
