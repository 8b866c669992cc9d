package rls

import (
	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
)

// match is what a descriptor's entries match in a domain: the rule of the descriptor that
// the last entry reaches, if it has one, and, per entry, the wildcard pattern of a
// share_threshold descriptor it went through, whose bucket all its values share.
type match struct {
	rule   *Rule
	shared []string // nil, or one per entry: the shared pattern, or ""
}

// domain reports whether c configures domain.
func (c *Config) domain(name string) (*node, bool) {
	if c == nil {
		return nil, false
	}
	n, ok := c.domains[name]
	return n, ok
}

// match walks the tree of top, the root of a domain, as the reference service does. At each
// level, an entry goes to the child with its key and value, else to the first child (in the
// file's order) with its key whose wildcard value matches, else to the child with its key
// and no value. The rule found is the one of the descriptor the last entry reaches; a
// descriptor the walk reaches before the last entry, or whose entries run out before its
// depth, gives none.
func lookup(top *node, entries []*rlv3.RateLimitDescriptor_Entry) match {
	var m match
	n := top
	for i, e := range entries {
		next := n.exact[entry{e.GetKey(), e.GetValue()}]
		if next == nil {
			for _, w := range n.wild {
				if w.key == e.GetKey() && glob(w.pattern, e.GetValue()) {
					next = w
					break
				}
			}
		}
		if next == nil {
			next = n.keyOnly[e.GetKey()]
		}
		if next == nil {
			return match{}
		}
		if next.share {
			if m.shared == nil {
				m.shared = make([]string, len(entries))
			}
			m.shared[i] = next.value
		}
		if i == len(entries)-1 {
			m.rule = next.rule
			return m
		}
		n = next
	}
	return match{}
}
