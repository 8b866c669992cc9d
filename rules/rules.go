package rules

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-go/ratelimit"
)

// Request is what rules read of a request, whatever its framework: HTTP (HTTP, Gin) and
// gRPC adapt theirs to it.
type Request interface {
	// Context is the request's context.
	Context() context.Context
	// Route is the route pattern the request was routed by ("POST /login",
	// "/v1/items/:id"), "" when unknown; for gRPC, the full method.
	Route() string
	// Method is the HTTP method; "" for gRPC.
	Method() string
	// FullMethod is the gRPC full method ("/pkg.Service/Method"); "" for HTTP.
	FullMethod() string
	// Header is the first value of an HTTP header, or of gRPC metadata, "" when absent.
	Header(name string) string
}

// KeyFunc finds a value of a request by name: a key to limit it under ("client-ip",
// "user"), or an attribute rules match on ("plan", "tenant"). The program registers its
// key functions in a Registry; a rules file names them. A value a client could choose
// freely (a header it sends, unauthenticated) must never pick a plan or a key: read them
// from what the server has verified (a session, a signed token).
type KeyFunc func(r Request) (string, error)

// Registry holds the key functions a rules file may name. Build it before loading a file;
// it is read, never written, while requests are decided.
type Registry map[string]KeyFunc

// Policy is a named set of limits, decided all or nothing, on one key.
type Policy struct {
	// Name names the policy in headers, metrics and bucket keys.
	Name string
	// Limits are decided all or nothing (ratelimit.MultiLimiter.AllowAll).
	Limits []ratelimit.Limit
	// Key names the registered key function whose value each limit is taken from.
	Key string
	// Cost is the tokens a request takes of each limit; 0 means 1.
	Cost int

	key KeyFunc
}

// Match says which requests a rule applies to: every field given must hold.
type Match struct {
	Route      string            // the route pattern, exactly
	Method     string            // the HTTP method, exactly
	FullMethod string            // the gRPC full method, exactly
	Header     map[string]string // header (or metadata) name → value, each exactly
	Key        map[string]string // key function name → the value it must give
}

// Rule maps the requests its Match selects to a policy. Rules are tried in order; the first
// that matches decides.
type Rule struct {
	Match  Match
	Policy string

	policy *Policy
	keys   []namedKey
}

type namedKey struct {
	fn    KeyFunc
	value string
}

// ErrInvalid is wrapped by every error of a rules file that cannot be used: it names the
// file, the line and the rule or policy.
var ErrInvalid = errors.New("rules: invalid rules")

// Set is a loaded rule set: immutable, safe for concurrent use.
type Set struct {
	// Version is the rules file's version string, "" when it has none.
	Version  string
	policies map[string]*Policy
	names    []string
	rules    []Rule
	def      *Policy
}

// Policies returns the names of the set's policies, sorted.
func (s *Set) Policies() []string { return s.names }

// Policy returns the policy named name.
func (s *Set) Policy(name string) (Policy, bool) {
	p, ok := s.policies[name]
	if !ok {
		return Policy{}, false
	}
	return *p, true
}

// Limits returns the limits r is under: those of the policy of the first rule that matches
// it, or of the default policy; nil when none applies. Each limit's Key is the policy's
// key function's value, its Name the policy's name; a key function that fails gives an
// empty Key, which the middleware limits under its UnkeyedKey and reports.
func (s *Set) Limits(r Request) []ratelimit.Request {
	p := s.match(r)
	if p == nil {
		return nil
	}
	key, err := p.key(r)
	if err != nil {
		key = ""
	}
	reqs := make([]ratelimit.Request, len(p.Limits))
	for i, l := range p.Limits {
		reqs[i] = ratelimit.Request{Key: key, Limit: l, N: p.Cost, Name: p.Name}
	}
	return reqs
}

// match returns the policy r is under, or nil.
func (s *Set) match(r Request) *Policy {
	for i := range s.rules {
		if s.rules[i].matches(r) {
			return s.rules[i].policy
		}
	}
	return s.def
}

func (rule *Rule) matches(r Request) bool {
	m := &rule.Match
	if m.Route != "" && r.Route() != m.Route ||
		m.Method != "" && r.Method() != m.Method ||
		m.FullMethod != "" && r.FullMethod() != m.FullMethod {
		return false
	}
	for name, want := range m.Header {
		if r.Header(name) != want {
			return false
		}
	}
	for _, k := range rule.keys {
		if v, err := k.fn(r); err != nil || v != k.value {
			return false
		}
	}
	return true
}

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
}

// RuleDoc is a rule as written.
type RuleDoc struct {
	Line   int
	Match  Match
	Policy string
}

// Compile checks doc and returns its Set. Every error wraps ErrInvalid and names the file,
// the line and the policy or rule: a limit ParseLimit cannot read, or that v (when not nil:
// the limiter the rules will be decided by) refuses; a key function the registry lacks; a
// rule without a match or naming no known policy; the same policy twice. Compile checks
// everything before returning, and returns every error it found, joined.
func Compile(doc Document, reg Registry, v ratelimit.LimitValidator) (*Set, error) {
	s := &Set{Version: doc.Version, policies: map[string]*Policy{}}
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
		p := &Policy{Name: pd.Name, Key: pd.Key, Cost: pd.Cost}
		if len(pd.Limits) == 0 {
			fail(pd.Line, what, errors.New("no limits"))
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
		if p.key = reg[pd.Key]; p.key == nil {
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
