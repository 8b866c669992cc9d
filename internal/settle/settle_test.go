package settle_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit/internal/settle"
)

// The reads of a file, poll by poll, and what each says: a content is loaded at its second
// read in a row, never at its first; a content that changes at every read never loads; one
// that failed is not tried again while it stays, but is once another has loaded.
func TestState(t *testing.T) {
	a, b, c, d := settle.Of([]byte("a")), settle.Of([]byte("b")), settle.Of([]byte("c")), settle.Of([]byte("d"))
	var s settle.State
	current := a
	type read struct {
		sum  settle.Sum
		load bool
		ok   bool // when loaded: whether it loads
	}
	steps := []read{
		{sum: a}, // in force
		{sum: b}, // new: wait
		{sum: c}, // changed again: wait
		{sum: c, load: true, ok: true},
		{sum: c},             // in force
		{sum: d},             // new
		{sum: d, load: true}, // fails
		{sum: d}, {sum: d},   // not again
		{sum: b}, {sum: b, load: true, ok: true},
		{sum: d}, {sum: d, load: true}, // tried again: another loaded since
	}
	for i, st := range steps {
		got := s.Next(st.sum, current)
		assert.Equal(t, st.load, got, "read %d", i)
		if !got {
			continue
		}
		if st.ok {
			current = st.sum
			s.Loaded()
		} else {
			s.Failed(st.sum)
		}
	}
}
