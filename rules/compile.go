package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-go/ratelimit"
)

// Document is a rules file as read, before it is checked: what Parse reads of JSON, and
// what a YAML reader (package rulesyaml) makes of YAML. Line numbers are 1-based, 0 when
// unknown.
type Document struct {
	File     string
	Version  string
	Default  string // the policy of requests no rule matches; "" for none
	Policies []PolicyDoc
	Rules    []RuleDoc
}

// PolicyDoc is a policy as written: its limits as text (ratelimit.ParseLimit).
type PolicyDoc struct {
	Line   int
	Name   string
	Limits []string
	Key    string
	Cost   int
	// Priority is "critical", "normal", "sheddable" (priority.Level's names), or ""
	// for none.
	Priority    string
	Shadow      bool
	Concurrency int
}

// RuleDoc is a rule as written.
type RuleDoc struct {
	Line   int
	Match  Match
	Policy string
}

// Compile checks doc and returns its Set, with the options of New that concern a set
// (WithValidator; the others are ignored). Every error wraps ErrInvalid
// and names the file, the line and the policy or rule: a limit ParseLimit cannot read, or
// that the validator refuses; a key function the registry lacks; a priority that is not
// one of priority.Level's names; a concurrency below 0, or above 0 in a shadow policy;
// a policy with neither limits nor concurrency;
// a rule without a match or naming no known policy; the same policy twice. Compile checks
// everything before returning, and returns every error it found, joined. An option given a
// nil of some type, which no file can mend, is an error of its own, before any.
func Compile(doc Document, reg Registry, opts ...Option) (*Set, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if err := o.nilArg(); err != nil {
		return nil, fmt.Errorf("rules: Compile: %w", err)
	}
	c := compiler{file: doc.File, reg: reg, opts: o,
		set: &Set{Version: doc.Version, policies: map[string]*Policy{}, byPath: map[string][]int{}}}
	for _, pd := range doc.Policies {
		c.policy(pd)
	}
	for i, rd := range doc.Rules {
		c.rule(i, rd)
	}
	if doc.Default != "" {
		if c.set.def = c.set.policies[doc.Default]; c.set.def == nil {
			c.fail(0, "default", fmt.Errorf("policy %q is not defined", doc.Default))
		}
	}
	slices.Sort(c.set.names)
	if len(c.errs) > 0 {
		return nil, errors.Join(c.errs...)
	}
	return c.set, nil
}

// compiler is Compile's work on one document: the set it builds, and the errors it found.
type compiler struct {
	file string
	reg  Registry
	opts options
	set  *Set
	errs []error
}

// fail records err, found at line of the file in what ("policy \"login\"", "rule 2").
func (c *compiler) fail(line int, what string, err error) {
	c.errs = append(c.errs, fmt.Errorf("%w: %s:%d: %s: %w", ErrInvalid, c.file, line, what, err))
}

// policy checks pd and adds it to the set, unless it has no name or one the set has.
func (c *compiler) policy(pd PolicyDoc) {
	what := fmt.Sprintf("policy %q", pd.Name)
	switch {
	case pd.Name == "":
		c.fail(pd.Line, "policy", errors.New("no name"))
		return
	case strings.ContainsAny(pd.Name, "|#"):
		c.fail(pd.Line, what, errors.New("a name with '|' or '#', which separate a bucket key's policy from its limit's index and its key"))
		return
	case c.set.policies[pd.Name] != nil:
		c.fail(pd.Line, what, errors.New("defined twice"))
		return
	}
	p := &Policy{Name: pd.Name, Key: pd.Key, Cost: pd.Cost, Shadow: pd.Shadow, Concurrency: pd.Concurrency}
	if len(pd.Limits) == 0 && pd.Concurrency == 0 {
		c.fail(pd.Line, what, errors.New("no limits and no concurrency"))
	}
	if pd.Priority != "" {
		var ok bool
		if p.Priority, ok = parsePriority(pd.Priority); !ok {
			c.fail(pd.Line, what, fmt.Errorf("priority %q is not one of critical, normal, sheddable", pd.Priority))
		}
		p.HasPriority = true
	}
	if err := c.concurrency(pd); err != nil {
		c.fail(pd.Line, what, err)
	}
	c.limits(pd, what, p)
	if p.key = c.reg[pd.Key]; p.key == nil && pd.Key != "" {
		c.fail(pd.Line, what, fmt.Errorf("key function %q is not registered", pd.Key))
	}
	c.set.policies[p.Name] = p
	c.set.names = append(c.set.names, p.Name)
}

// concurrency returns an error for the concurrency of pd that no limiter can give.
func (c *compiler) concurrency(pd PolicyDoc) error {
	switch {
	case pd.Concurrency < 0:
		return fmt.Errorf("concurrency %d is below 0", pd.Concurrency)
	case pd.Concurrency > 0 && pd.Shadow:
		return errors.New("shadow and concurrency: a shadow policy decides rate limits only, and a permit would be held for real")
	}
	return nil
}

// limits reads pd's limits into p, and checks its cost against them.
func (c *compiler) limits(pd PolicyDoc, what string, p *Policy) {
	for _, text := range pd.Limits {
		l, err := ratelimit.ParseLimit(text)
		// A policy's buckets keep their usage across a reload that changes its numbers
		// (but for a warm-up, whose cold start has none to keep).
		l.KeepUsage = l.Warmup == 0
		if err == nil && c.opts.validator != nil {
			err = c.opts.validator.ValidateLimit(l)
		}
		if err != nil {
			c.fail(pd.Line, what, err)
			continue
		}
		p.Limits = append(p.Limits, l)
	}
	for _, l := range p.Limits {
		if pd.Cost > l.Burst {
			c.fail(pd.Line, what, fmt.Errorf("cost %d is above the burst of %v", pd.Cost, l))
		}
	}
	if pd.Cost < 0 {
		c.fail(pd.Line, what, fmt.Errorf("cost %d is below 0", pd.Cost))
	}
}

// rule checks rd, the i-th rule (from 0), and adds it to the set, indexed by its path.
func (c *compiler) rule(i int, rd RuleDoc) {
	what := fmt.Sprintf("rule %d", i+1)
	rule := Rule{Match: rd.Match, Policy: rd.Policy, policy: c.set.policies[rd.Policy]}
	if rule.policy == nil {
		c.fail(rd.Line, what, fmt.Errorf("policy %q is not defined", rd.Policy))
	}
	m := rd.Match
	if m.matchesAll() {
		c.fail(rd.Line, what, errors.New("matches every request: give the default policy (\"default\") instead"))
	}
	if m.Route != "" {
		rule.method, rule.path = splitRoute(m.Route)
		if err := routeConflict(m, rule.method, rule.path); err != nil {
			c.fail(rd.Line, what, err)
		}
	}
	switch {
	case rule.path != "":
		c.set.byPath[rule.path] = append(c.set.byPath[rule.path], i)
	case m.FullMethod != "": // a call's route is its full method
		c.set.byPath[m.FullMethod] = append(c.set.byPath[m.FullMethod], i)
	default:
		c.set.others = append(c.set.others, i)
	}
	for name, value := range m.Key {
		fn := c.reg[name]
		if fn == nil {
			c.fail(rd.Line, what, fmt.Errorf("key function %q is not registered", name))
			continue
		}
		rule.keys = append(rule.keys, namedKey{fn, value})
	}
	c.set.rules = append(c.set.rules, rule)
}

// routeConflict returns an error for m's route, of method and path, that has no path or
// that m's method or full method contradicts.
func routeConflict(m Match, method, path string) error {
	switch {
	case !strings.Contains(path, "/"):
		return fmt.Errorf("route %q has no path: a pattern (\"POST /login\", \"/items/:id\") or a gRPC full method", m.Route)
	case method != "" && m.Method != "" && method != m.Method:
		return fmt.Errorf("route %q and method %q never both hold", m.Route, m.Method)
	case m.FullMethod != "" && path != m.FullMethod: // a call's route is its full method
		return fmt.Errorf("route %q and full method %q never both hold", m.Route, m.FullMethod)
	}
	return nil
}

// matchesAll reports whether m matches every request: it names nothing to match.
func (m Match) matchesAll() bool {
	return m.Route == "" && m.Method == "" && m.FullMethod == "" && len(m.Header) == 0 && len(m.Key) == 0
}
