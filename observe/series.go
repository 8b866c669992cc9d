package observe

import (
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// OtherSeries is the policy and backend of the decisions a Series counts past its cap.
const OtherSeries = "_OTHER"

// Series is the bounded table of per-(policy, backend) series that a metric Observer keeps
// (otelmetrics and prommetrics use it): read without a lock on every decision, copied on
// write when a pair is first seen, and capped, so that no configuration can make the
// number of series grow without bound. Names are made valid UTF-8 (a run of bytes that is
// not is replaced by U+FFFD), which metric exporters require of label values: two names
// that differ only in such bytes share a series. It is safe for concurrent use; build it
// with NewSeries.
type Series[S any] struct {
	max   int
	make  func(policy, backend string) *S
	mu    sync.Mutex // serializes additions
	made  int        // series made, at most max; guarded by mu
	m     atomic.Pointer[map[seriesKey]*S]
	other *S
	// last is the pair added last and its series, found without hashing: a service whose
	// decisions all fall in one series (the common case) never reads the map.
	last atomic.Pointer[lastSeries[S]]
}

// lastSeries is a Series' pair added last, and its series.
type lastSeries[S any] struct {
	key seriesKey
	s   *S
}

type seriesKey struct{ policy, backend string }

// NewSeries returns a table of at most max pairs, whose series make makes from the pair's
// valid UTF-8 names, and whose decisions past the cap share the series of
// (OtherSeries, OtherSeries).
func NewSeries[S any](max int, make func(policy, backend string) *S) *Series[S] {
	t := &Series[S]{max: max, make: make, other: make(OtherSeries, OtherSeries)}
	m := map[seriesKey]*S{}
	t.m.Store(&m)
	return t
}

// Lookup returns the series of (policy, backend), making it on first sight; past the cap,
// the shared series of OtherSeries. A pair seen before costs one map read and allocates
// nothing.
func (t *Series[S]) Lookup(policy, backend string) *S {
	if l := t.last.Load(); l != nil && l.key.policy == policy && l.key.backend == backend {
		return l.s
	}
	if s, ok := (*t.m.Load())[seriesKey{policy, backend}]; ok {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	m := *t.m.Load()
	if s, ok := m[seriesKey{policy, backend}]; ok {
		return s
	}
	clean := seriesKey{ValidName(policy), ValidName(backend)}
	s, ok := m[clean]
	switch {
	case ok && len(m) >= 2*t.max:
		return s // no room to remember the name as given: cleaned on every lookup
	case !ok && t.made >= t.max:
		return t.other
	case !ok:
		// Copies of the names: the caller's may share memory with a larger buffer.
		clean = seriesKey{strings.Clone(clean.policy), strings.Clone(clean.backend)}
		s = t.make(clean.policy, clean.backend)
		t.made++
	}
	next := maps.Clone(m)
	next[clean] = s
	// The names as given too, so that the next lookup finds them at once.
	given := seriesKey{strings.Clone(policy), strings.Clone(backend)}
	next[given] = s
	t.m.Store(&next)
	// The last pair keeps the caller's own strings: a caller that passes the same ones on
	// every decision (Wrap, the middlewares) is then found by comparing pointers, not bytes.
	// (At most this one pair's memory stays alive that way.)
	t.last.Store(&lastSeries[S]{seriesKey{policy, backend}, s})
	return s
}

// All calls f with every series once, OtherSeries's last.
func (t *Series[S]) All(f func(*S)) {
	seen := map[*S]bool{}
	for _, s := range *t.m.Load() {
		if !seen[s] {
			seen[s] = true
			f(s)
		}
	}
	f(t.other)
}

// ValidName returns name with each run of bytes that is not UTF-8 replaced by U+FFFD, as
// the series of Lookup are named. A policy or backend name becomes an attribute or label
// value, which exporters refuse (Prometheus fails the whole scrape) when it is not UTF-8;
// cleaned before counting, two names that differ only in such bytes count in one series.
func ValidName(name string) string {
	if utf8.ValidString(name) {
		return name
	}
	return strings.ToValidUTF8(name, "\uFFFD")
}
