package pipeline

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// A failing limiter is logged once per LogEvery, not once per request: 100 errors in one
// second give one line, and the next line counts the 99 left out.
func TestThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		th := NewThrottle()
		lines, dropped := 0, int64(0)
		for range 100 {
			if ok, n := th.Allow(); ok {
				lines++
				dropped += n
			}
			time.Sleep(LogEvery / 100) // synctest's clock: no real time passes
		}
		assert.Equal(t, 1, lines)
		assert.Equal(t, int64(0), dropped)
		time.Sleep(LogEvery)
		ok, n := th.Allow()
		assert.True(t, ok)
		assert.Equal(t, int64(99), n)
		ok, _ = th.Allow()
		assert.False(t, ok)
	})
}
