package ratelimit_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
)

// only hides every capability of the limiter it holds.
type only struct{ ratelimit.Limiter }

// unwrapper lends the capabilities of the limiter it holds.
type unwrapper struct{ ratelimit.Limiter }

func (u unwrapper) Unwrap() ratelimit.Limiter { return u.Limiter }

// answering answers for MultiLimiter itself with give, whether or not it wraps one.
type answering struct {
	unwrapper
	give ratelimit.MultiLimiter
}

func (a answering) As(target any) bool {
	if t, ok := target.(*ratelimit.MultiLimiter); ok && a.give != nil {
		*t = a.give
		return true
	}
	return false
}

// As finds a capability on the limiter itself, through an As method, and through Unwrap,
// in that order, and nowhere else.
func TestAs(t *testing.T) {
	l := local.New(local.WithCleanupInterval(0))
	defer l.Close()
	for _, c := range []struct {
		name string
		l    ratelimit.Limiter
		want ratelimit.MultiLimiter // nil: none
	}{
		{"itself", l, l},
		{"hidden", only{l}, nil},
		{"lent", unwrapper{l}, l},
		{"lent twice", unwrapper{unwrapper{l}}, l},
		{"lent from a hidden one", unwrapper{only{l}}, nil},
		{"answered", answering{unwrapper{only{l}}, l}, l},
		// A wrapper that answers no leaves the search to what it unwraps.
		{"not answered, lent", answering{unwrapper{l}, nil}, l},
		{"nil", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, ok := ratelimit.As[ratelimit.MultiLimiter](c.l)
			assert.Equal(t, c.want != nil, ok)
			assert.Equal(t, c.want, m)
		})
	}
	got, ok := ratelimit.As[*local.Limiter](unwrapper{l})
	assert.True(t, ok, "a concrete type is found as an interface is")
	assert.Same(t, l, got)
}
