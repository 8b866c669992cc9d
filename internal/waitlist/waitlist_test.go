package waitlist_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit/internal/waitlist"
)

type item struct {
	waitlist.Links[item]
	name string
}

func TestList(t *testing.T) {
	var q waitlist.List[item, *item]
	a, b, c, d := &item{name: "a"}, &item{name: "b"}, &item{name: "c"}, &item{name: "d"}
	for _, w := range []*item{a, b, c, d} {
		q.PushBack(w)
	}
	assert.Equal(t, 4, q.Len())
	assert.Same(t, a, q.Front())
	assert.Same(t, d, q.Back())
	q.Remove(b) // from the middle
	q.Remove(d) // the back
	assert.Same(t, c, q.Back())
	assert.Same(t, a, q.PopFront()) // the front
	assert.Same(t, c, q.Front())
	assert.Same(t, c, q.Back())
	q.PushBack(b) // a removed element joins again
	assert.Same(t, c, q.PopFront())
	assert.Same(t, b, q.PopFront())
	assert.Equal(t, 0, q.Len())
	assert.Nil(t, q.Front())
	assert.Nil(t, q.Back())
}
