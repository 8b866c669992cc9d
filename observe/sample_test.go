package observe_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/observe"
)

// sampler is a recorder that needs one duration in n.
type sampler struct {
	recorder
	n int
}

func (s *sampler) DurationSample() int { return s.n }

// timed lists, for each decision o was told of, whether it carried a duration.
func timed(o *recorder) []bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]bool, len(o.decisions))
	for i, d := range o.decisions {
		out[i] = d.Duration >= 0
	}
	return out
}

// TestJoinDurationSample: Join's observer needs the smallest n of its observers, one that
// is not a DurationSampler needing every duration, one below 1 too.
func TestJoinDurationSample(t *testing.T) {
	s16, s8, s4, s0 := &sampler{n: 16}, &sampler{n: 8}, &sampler{n: 4}, &sampler{n: 0}
	for _, c := range []struct {
		name string
		o    observe.Observer
		want int
	}{
		{"one sampler", observe.Join(s16), 16},
		{"one sampler and nil", observe.Join(nil, s16), 16},
		{"two samplers", observe.Join(s16, s4), 4},
		{"flattened", observe.Join(observe.Join(s16, s8), s16), 8},
		{"a sampler and an observer that is not one", observe.Join(s16, &recorder{}), 1},
		{"not a sampler", observe.Join(&recorder{}), 1},
		{"below 1", observe.Join(s16, s0), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, ok := c.o.(observe.DurationSampler)
			require.True(t, ok)
			assert.Equal(t, c.want, s.DurationSample())
		})
	}
}

// TestWrapDurationSample: Wrap times one call in n for a DurationSampler, the first
// included, and reports the others with a negative Duration. With n = 4, thirteen calls,
// the 11th an AllowAll of two limits (two reports, one call): calls 1, 5, 9 and 13 are
// timed, which are reports 1, 5, 9 and 14 of 14.
func TestWrapDurationSample(t *testing.T) {
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	obs := &sampler{n: 4}
	w := observe.Wrap(l, obs, "api")
	ctx, limit := context.Background(), ratelimit.PerSecond(1000)
	call := func() {
		_, err := w.Allow(ctx, "k", limit)
		require.NoError(t, err)
	}
	for range 10 {
		call()
	}
	m, _ := ratelimit.As[ratelimit.MultiLimiter](w)
	_, err := m.AllowAll(ctx, []ratelimit.Request{{Key: "a", Limit: limit}, {Key: "b", Limit: limit}})
	require.NoError(t, err)
	call()
	call()
	assert.Equal(t, []bool{true, false, false, false, true, false, false, false, true, false,
		false, false, false, true}, timed(&obs.recorder))
}

// TestDurationOnlyToSamplers: joined with an observer that is not a DurationSampler, a
// sampler is told of every duration, as the other is; joined with a sampler of a smaller
// n, it is told of that one's sample.
func TestDurationOnlyToSamplers(t *testing.T) {
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	ctx, limit := context.Background(), ratelimit.PerSecond(1000)
	decide := func(o observe.Observer) {
		w := observe.Wrap(l, o, "api")
		for range 5 {
			_, err := w.Allow(ctx, "k", limit)
			require.NoError(t, err)
		}
	}
	s16, rec := &sampler{n: 16}, &recorder{}
	decide(observe.Join(s16, rec))
	every := []bool{true, true, true, true, true}
	assert.Equal(t, every, timed(&s16.recorder))
	assert.Equal(t, every, timed(rec))

	s16, s2 := &sampler{n: 16}, &sampler{n: 2}
	decide(observe.Join(s16, s2))
	assert.Equal(t, []bool{true, false, true, false, true}, timed(&s16.recorder))
	assert.Equal(t, []bool{true, false, true, false, true}, timed(&s2.recorder))
}

// TestStopwatch: a Stopwatch times every decision for an observer that is not a
// DurationSampler, and exactly one in n for one, the first included, however many
// goroutines share it: 8 goroutines times 125 decisions with n = 16 time the 1st, 17th,
// ..., 993rd, 63 of them.
func TestStopwatch(t *testing.T) {
	every := observe.NewStopwatch(&recorder{})
	for range 20 {
		assert.GreaterOrEqual(t, every.Stop(every.Start()), time.Duration(0))
	}
	assert.Negative(t, every.Stop(-1), "a decision not started is not timed")

	sw := observe.NewStopwatch(&sampler{n: 16})
	var (
		wg sync.WaitGroup
		mu sync.Mutex
		n  int
	)
	for range 8 {
		wg.Go(func() {
			for range 125 {
				if sw.Stop(sw.Start()) >= 0 {
					mu.Lock()
					n++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 63, n)

	// n not a power of two: decisions 1, 4, 7 and 10 of ten are timed.
	three := observe.NewStopwatch(&sampler{n: 3})
	var timed []int
	for i := range 10 {
		if three.Stop(three.Start()) >= 0 {
			timed = append(timed, i+1)
		}
	}
	assert.Equal(t, []int{1, 4, 7, 10}, timed)
}
