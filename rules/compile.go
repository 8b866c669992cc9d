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
	// Priority is "critical", "normal", "sheddable" (ratelimit.Priority's names), or ""
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
// one of ratelimit.Priority's names; a concurrency below 0, or above 0 in a shadow policy;
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
	v := o.validator
	s := &Set{Version: doc.Version, policies: map[string]*Policy{}, byPath: map[string][]int{}}
	var errs []error
	fail := func(line int, what string, err error) {
		errs = append(errs, fmt.Errorf("%w: %s:%d: %s: %w", ErrInvalid, doc.File, line, what, err))
	}
	for _, pd := range doc.Policies {
		what := fmt.Sprintf("policy %q", pd.Name)
		switch {
		case pd.Name == "":
			fail(pd.Line, "policy", errors.New("no name"))
			continue
		case strings.ContainsAny(pd.Name, "|#"):
			fail(pd.Line, what, errors.New("a name with '|' or '#', which separate a bucket key's policy from its limit's index and its key"))
			continue
		case s.policies[pd.Name] != nil:
			fail(pd.Line, what, errors.New("defined twice"))
			continue
		}
		p := &Policy{Name: pd.Name, Key: pd.Key, Cost: pd.Cost, Shadow: pd.Shadow, Concurrency: pd.Concurrency}
		if len(pd.Limits) == 0 && pd.Concurrency == 0 {
			fail(pd.Line, what, errors.New("no limits and no concurrency"))
		}
		if pd.Priority != "" {
			var ok bool
			if p.Priority, ok = parsePriority(pd.Priority); !ok {
				fail(pd.Line, what, fmt.Errorf("priority %q is not one of critical, normal, sheddable", pd.Priority))
			}
			p.HasPriority = true
		}
		switch {
		case pd.Concurrency < 0:
			fail(pd.Line, what, fmt.Errorf("concurrency %d is below 0", pd.Concurrency))
		case pd.Concurrency > 0 && pd.Shadow:
			fail(pd.Line, what, errors.New("shadow and concurrency: a shadow policy decides rate limits only, and a permit would be held for real"))
		}
		for _, text := range pd.Limits {
			l, err := ratelimit.ParseLimit(text)
			// A policy's buckets keep their usage across a reload that changes its numbers
			// (but for a warm-up, whose cold start has none to keep).
			l.KeepUsage = l.Warmup == 0
			if err == nil && v != nil {
				err = v.ValidateLimit(l)
			}
			if err != nil {
				fail(pd.Line, what, err)
				continue
			}
			p.Limits = append(p.Limits, l)
		}
		for _, l := range p.Limits {
			if pd.Cost > l.Burst {
				fail(pd.Line, what, fmt.Errorf("cost %d is above the burst of %v", pd.Cost, l))
			}
		}
		if pd.Cost < 0 {
			fail(pd.Line, what, fmt.Errorf("cost %d is below 0", pd.Cost))
		}
		if p.key = reg[pd.Key]; p.key == nil && pd.Key != "" {
			fail(pd.Line, what, fmt.Errorf("key function %q is not registered", pd.Key))
		}
		s.policies[p.Name] = p
		s.names = append(s.names, p.Name)
	}
	for i, rd := range doc.Rules {
		what := fmt.Sprintf("rule %d", i+1)
		rule := Rule{Match: rd.Match, Policy: rd.Policy, policy: s.policies[rd.Policy]}
		if rule.policy == nil {
			fail(rd.Line, what, fmt.Errorf("policy %q is not defined", rd.Policy))
		}
		m := rd.Match
		if m.Route == "" && m.Method == "" && m.FullMethod == "" && len(m.Header) == 0 && len(m.Key) == 0 {
			fail(rd.Line, what, errors.New("matches every request: give the default policy (\"default\") instead"))
		}
		if m.Route != "" {
			rule.method, rule.path = splitRoute(m.Route)
			switch {
			case !strings.Contains(rule.path, "/"):
				fail(rd.Line, what, fmt.Errorf("route %q has no path: a pattern (\"POST /login\", \"/items/:id\") or a gRPC full method", m.Route))
			case rule.method != "" && m.Method != "" && rule.method != m.Method:
				fail(rd.Line, what, fmt.Errorf("route %q and method %q never both hold", m.Route, m.Method))
			case m.FullMethod != "" && rule.path != m.FullMethod: // a call's route is its full method
				fail(rd.Line, what, fmt.Errorf("route %q and full method %q never both hold", m.Route, m.FullMethod))
			}
		}
		switch {
		case rule.path != "":
			s.byPath[rule.path] = append(s.byPath[rule.path], i)
		case m.FullMethod != "": // a call's route is its full method
			s.byPath[m.FullMethod] = append(s.byPath[m.FullMethod], i)
		default:
			s.others = append(s.others, i)
		}
		for name, value := range m.Key {
			fn := reg[name]
			if fn == nil {
				fail(rd.Line, what, fmt.Errorf("key function %q is not registered", name))
				continue
			}
			rule.keys = append(rule.keys, namedKey{fn, value})
		}
		s.rules = append(s.rules, rule)
	}
	if doc.Default != "" {
		if s.def = s.policies[doc.Default]; s.def == nil {
			fail(0, "default", fmt.Errorf("policy %q is not defined", doc.Default))
		}
	}
	slices.Sort(s.names)
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return s, nil
}
