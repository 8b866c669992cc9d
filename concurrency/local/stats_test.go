package local_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/concurrency/local"
)

func TestStats(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		l := local.New()
		defer l.Close()
		assert.Equal(t, concurrency.Stats{}, l.Stats())
	})
	t.Run("keys", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := local.New()
			defer l.Close()
			// a: 2 held of 2, one waiting; b: 1 held of 5; c: idle, last max 3.
			a1, err := l.Acquire(t.Context(), "a", 2)
			require.NoError(t, err)
			defer a1.Release()
			a2, err := l.Acquire(t.Context(), "a", 2)
			require.NoError(t, err)
			defer a2.Release()
			go func() {
				p, _ := l.Acquire(t.Context(), "a", 2)
				p.Release()
			}()
			synctest.Wait()
			b, err := l.Acquire(t.Context(), "b", 5)
			require.NoError(t, err)
			defer b.Release()
			c, err := l.Acquire(t.Context(), "c", 3)
			require.NoError(t, err)
			c.Release()
			assert.Equal(t, concurrency.Stats{Keys: 3, InFlight: 3, Waiting: 1, MinLimit: 2, MaxLimit: 5}, l.Stats())
		})
	})
	t.Run("adaptive", func(t *testing.T) {
		// The limits in force, not the calls' max: a new key starts at Initial (4), and a
		// drop takes a's to ⌊4 · 0.5⌋ = 2.
		l := local.New(local.WithAdaptive(concurrency.AIMD{Initial: 4, Backoff: 0.5}))
		defer l.Close()
		p, err := l.Acquire(t.Context(), "a", 100)
		require.NoError(t, err)
		p.ReleaseWith(concurrency.Dropped)
		q, err := l.Acquire(t.Context(), "b", 100)
		require.NoError(t, err)
		defer q.Release()
		assert.Equal(t, concurrency.Stats{Keys: 2, InFlight: 1, MinLimit: 2, MaxLimit: 4}, l.Stats())
	})
	t.Run("overflow", func(t *testing.T) {
		// 64 keys at most (one per shard): 200 busy keys overflow, and their permits count
		// in InFlight, not in Keys nor in the limits.
		l := local.New(local.WithMaxKeys(64))
		defer l.Close()
		held := 0
		for i := range 200 {
			p, ok, err := l.TryAcquire(t.Context(), string(rune('A'+i)), 1000)
			require.NoError(t, err)
			if ok {
				held++
				defer p.Release()
			}
		}
		s := l.Stats()
		assert.Equal(t, 200, held, "an overflow key takes each call's max, 1,000")
		assert.Equal(t, 200, s.InFlight)
		assert.LessOrEqual(t, s.Keys, 64)
		assert.Equal(t, concurrency.Stats{Keys: s.Keys, InFlight: 200, MinLimit: 1000, MaxLimit: 1000}, s)
	})
}
