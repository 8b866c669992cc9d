// Package series holds the bounded table of (policy, backend) series that the metric
// observers (otelmetrics, prommetrics) keep: read without a lock on every decision, copied on
// write when a pair is first seen, and capped, so that no configuration can make the number
// of series grow without bound.
package series

import (
	"maps"
	"strings"
	"sync"
	"sync/atomic"
)

// Other is the policy and backend of the decisions past the cap.
const Other = "_OTHER"

// Key names one series.
type Key struct{ Policy, Backend string }

// Table maps (policy, backend) pairs to their series S, up to a cap. Its zero value is not
// usable: see New.
type Table[S any] struct {
	max   int
	make  func(policy, backend string) *S
	mu    sync.Mutex // serializes additions
	m     atomic.Pointer[map[Key]*S]
	other *S
}

// New returns a table of at most max pairs, whose series make makes, and whose decisions
// past the cap share the series of (Other, Other).
func New[S any](max int, make func(policy, backend string) *S) *Table[S] {
	t := &Table[S]{max: max, make: make, other: make(Other, Other)}
	m := map[Key]*S{}
	t.m.Store(&m)
	return t
}

// Lookup returns the series of (policy, backend), making it on first sight; past the cap,
// the shared series of Other.
func (t *Table[S]) Lookup(policy, backend string) *S {
	if s, ok := t.find(policy, backend); ok {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s, ok := t.find(policy, backend); ok {
		return s
	}
	// Copies of the names: the caller's may share memory with a larger buffer.
	k := Key{strings.Clone(policy), strings.Clone(backend)}
	s := t.make(k.Policy, k.Backend)
	next := maps.Clone(*t.m.Load())
	next[k] = s
	t.m.Store(&next)
	return s
}

// find returns the series of (policy, backend), or Other's past the cap; ok is false when
// the pair is new and there is room for it.
func (t *Table[S]) find(policy, backend string) (s *S, ok bool) {
	m := *t.m.Load()
	if s, ok := m[Key{policy, backend}]; ok {
		return s, true
	}
	if len(m) >= t.max {
		return t.other, true
	}
	return nil, false
}

// All calls f with every series, Other's last.
func (t *Table[S]) All(f func(*S)) {
	for _, s := range *t.m.Load() {
		f(s)
	}
	f(t.other)
}
