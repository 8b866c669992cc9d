package concurrency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit/concurrency"
)

// TestAIMDAlone drives the algorithm without a limiter, as a backend of its own would: one
// key's state, grants and outcomes in a timeline, the limit after each step.
func TestAIMDAlone(t *testing.T) {
	a := concurrency.AIMD{Min: 2, Initial: 4, Target: 10 * time.Millisecond}
	var s concurrency.AIMDState
	const ceiling = 100
	assert.Equal(t, 4, a.Limit(&s, ceiling), "a new key starts at Initial")
	assert.Equal(t, 3, a.Limit(&s, 3), "the call's max bounds it")

	// Slow start: a busy grant (2 of 4 held) that succeeds within Target adds 1.
	g := a.Grant(&s, 2, ceiling)
	a.Sample(&s, g, concurrency.Succeeded, time.Millisecond, ceiling)
	assert.Equal(t, 5, a.Limit(&s, ceiling))
	// An idle grant (1 of 5 held) tests nothing: no change.
	a.Sample(&s, a.Grant(&s, 1, ceiling), concurrency.Succeeded, time.Millisecond, ceiling)
	assert.Equal(t, 5, a.Limit(&s, ceiling))
	// Ignored changes nothing, even from a busy grant.
	a.Sample(&s, a.Grant(&s, 5, ceiling), concurrency.Ignored, time.Millisecond, ceiling)
	assert.Equal(t, 5, a.Limit(&s, ceiling))

	// Two permits granted under 5, both dropped: one decrease, ⌊5 · 0.9⌋ = 4.
	g1, g2 := a.Grant(&s, 4, ceiling), a.Grant(&s, 5, ceiling)
	a.Sample(&s, g1, concurrency.Dropped, time.Millisecond, ceiling)
	a.Sample(&s, g2, concurrency.Dropped, time.Millisecond, ceiling)
	assert.Equal(t, 4, a.Limit(&s, ceiling))

	// After a drop, +1 per limit's worth (4) of busy successes.
	for i := range 4 {
		assert.Equal(t, 4, a.Limit(&s, ceiling), "success %d", i)
		a.Sample(&s, a.Grant(&s, 2, ceiling), concurrency.Succeeded, time.Millisecond, ceiling)
	}
	assert.Equal(t, 5, a.Limit(&s, ceiling))

	// A success held past Target is a drop: ⌊5 · 0.9⌋ = 4; then ⌊4 · 0.9⌋ = 3,
	// ⌊3 · 0.9⌋ = 2, and Min holds it at 2.
	for _, want := range []int{4, 3, 2, 2} {
		a.Sample(&s, a.Grant(&s, 1, ceiling), concurrency.Succeeded, 11*time.Millisecond, ceiling)
		assert.Equal(t, want, a.Limit(&s, ceiling))
	}
	// A call whose max is below Min is held to its max.
	assert.Equal(t, 1, a.Limit(&s, 1))
}

// TestAIMDZeroIsUsable: the zero AIMD has Min 1, Initial 1, Backoff 0.9.
func TestAIMDZeroIsUsable(t *testing.T) {
	var a concurrency.AIMD
	var s concurrency.AIMDState
	assert.Equal(t, 1, a.Limit(&s, 10))
	for _, want := range []int{2, 3, 4} { // slow start from 1, every permit of the key held
		a.Sample(&s, a.Grant(&s, a.Limit(&s, 10), 10), concurrency.Succeeded, time.Second, 10)
		assert.Equal(t, want, a.Limit(&s, 10))
	}
	a.Sample(&s, a.Grant(&s, 4, 10), concurrency.Dropped, 0, 10)
	assert.Equal(t, 3, a.Limit(&s, 10), "⌊4 · 0.9⌋")
}
