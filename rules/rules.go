package rules

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/sluice-go/ratelimit"
)

// Request is what rules read of a request, whatever its framework: FromHTTP and FromGRPC
// make one. It is a value, passed as it is, so that reading a request allocates nothing.
type Request struct {
	ctx        context.Context
	route      string
	method     string
	fullMethod string
	http       *http.Request
	metadata   func(ctx context.Context, name string) string
}

// FromHTTP is r as rules read it, routed by route: the pattern http.ServeMux routed it by
// ("POST /login"), Gin's FullPath ("/v1/items/:id"), "" when unknown.
func FromHTTP(r *http.Request, route string) Request {
	return Request{ctx: r.Context(), route: route, method: r.Method, http: r}
}

// FromGRPC is a gRPC call as rules read it: its route and full method are fullMethod
// ("/pkg.Service/Method"), and metadata(ctx, name) gives the first value of its metadata
// name, "" when absent (grpcmw's reads the incoming metadata, or on a client the
// outgoing); nil means none. It is a function rather than the metadata itself so that a
// call no rule asks about is not read, and so that this package does not import gRPC.
func FromGRPC(ctx context.Context, fullMethod string, metadata func(ctx context.Context, name string) string) Request {
	return Request{ctx: ctx, route: fullMethod, fullMethod: fullMethod, metadata: metadata}
}

// Context is the request's context.
func (r Request) Context() context.Context {
	if r.ctx == nil {
		return context.Background()
	}
	return r.ctx
}

// Route is the route pattern the request was routed by ("POST /login", "/v1/items/:id"),
// "" when unknown; for gRPC, the full method.
func (r Request) Route() string { return r.route }

// Method is the HTTP method; "" for gRPC.
func (r Request) Method() string { return r.method }

// FullMethod is the gRPC full method ("/pkg.Service/Method"); "" for HTTP.
func (r Request) FullMethod() string { return r.fullMethod }

// HTTP is the HTTP request; nil for gRPC.
func (r Request) HTTP() *http.Request { return r.http }

// Header is the first value of an HTTP header, or of gRPC metadata, "" when absent.
func (r Request) Header(name string) string {
	switch {
	case r.http != nil:
		return r.http.Header.Get(name)
	case r.metadata != nil:
		return r.metadata(r.Context(), name)
	}
	return ""
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

// Policy is a named set of limits, decided all or nothing, on one key, with what the
// middlewares do with its requests besides (package doc: "Policies").
type Policy struct {
	// Name names the policy in headers, metrics and bucket keys.
	Name string
	// Limits are decided all or nothing (ratelimit.MultiLimiter.AllowAll); none for a
	// policy of Concurrency only.
	Limits []ratelimit.Limit
	// Key names the registered key function whose value keys the policy's buckets; ""
	// means the middleware's default key (that of its WithKeyFunc): the client address on
	// Gin and net/http, the full method on gRPC.
	Key string
	// Cost is the tokens a request takes of each limit; 0 means 1.
	Cost int
	// Priority is the priority of the policy's requests when HasPriority is set; otherwise
	// they keep the one the middleware gives them (ratelimit.WithPriority).
	Priority ratelimit.Priority
	// HasPriority reports that the file names the policy's priority.
	HasPriority bool
	// Shadow decides and reports the policy's requests, in buckets of their own, and lets
	// every one proceed: a safe rollout of a new limit.
	Shadow bool
	// Concurrency is the most requests of one key that may run at once, with permits of
	// the limiter of WithConcurrency; 0 means no concurrency limit.
	Concurrency int

	key KeyFunc
}

// KeyOf returns r's key under p: the value of p's key function. A policy with no Key has
// no function of its own (the middleware finds its key): KeyOf fails with
// ratelimit.ErrKeyEmpty.
func (p *Policy) KeyOf(r Request) (string, error) {
	if p.key == nil {
		return "", ratelimit.ErrKeyEmpty
	}
	return p.key(r)
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

// parsePriority returns the priority of ratelimit.Priority's name name.
func parsePriority(name string) (ratelimit.Priority, bool) {
	for _, p := range [...]ratelimit.Priority{ratelimit.Critical, ratelimit.Normal, ratelimit.Sheddable} {
		if p.String() == name {
			return p, true
		}
	}
	return 0, false
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

// Match returns the policy r is under: that of the first rule that matches it, or the
// default policy; nil when none applies. The policy is the set's own: read it, never change
// it. Match allocates nothing.
func (s *Set) Match(r Request) *Policy {
	for i := range s.rules {
		if s.rules[i].matches(r) {
			return s.rules[i].policy
		}
	}
	return s.def
}

// AppendLimits appends the limits r is under to dst and returns the result: one per limit
// of the policy Match finds, each with the policy's name, cost and r's key under it (a key
// function that fails gives an empty Key, which a middleware limits under its UnkeyedKey
// and reports). It allocates nothing when dst has room.
func (s *Set) AppendLimits(dst []ratelimit.Request, r Request) []ratelimit.Request {
	p := s.Match(r)
	if p == nil {
		return dst
	}
	key, err := p.key(r)
	if err != nil {
		key = ""
	}
	for _, l := range p.Limits {
		dst = append(dst, ratelimit.Request{Key: key, Limit: l, N: p.Cost, Name: p.Name})
	}
	return dst
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
// (WithValidator, WithConcurrency; the others are ignored). Every error wraps ErrInvalid
// and names the file, the line and the policy or rule: a limit ParseLimit cannot read, or
// that the validator refuses; a key function the registry lacks; a priority that is not
// one of ratelimit.Priority's names; a concurrency below 0, or above 0 without a
// concurrency limiter or in a shadow policy; a policy with neither limits nor concurrency;
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
		case pd.Concurrency > 0 && o.concurrency == nil:
			fail(pd.Line, what, fmt.Errorf("concurrency %d needs a concurrency limiter (rules.WithConcurrency)", pd.Concurrency))
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
