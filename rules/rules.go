package rules

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/priority"
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
	// they keep the one the middleware gives them (priority.With).
	Priority priority.Level
	// HasPriority reports that the file names the policy's priority.
	HasPriority bool
	// Shadow decides and reports the policy's requests, in buckets of their own, and lets
	// every one proceed: a safe rollout of a new limit.
	Shadow bool
	// Concurrency is the most requests of one key that may run at once, with permits of
	// the middleware's concurrency limiter (its WithConcurrency; a middleware without one
	// refuses the set); 0 means the middleware's own max, if any.
	Concurrency int

	key KeyFunc
}

// KeyOf returns r's key under p: the value of p's key function. A policy with no Key has
// no function of its own (the middleware finds its key): KeyOf fails with
// ratelimit.ErrInvalidArgument.
func (p *Policy) KeyOf(r Request) (string, error) {
	if p.key == nil {
		return "", args.ErrKeyEmpty
	}
	return p.key(r)
}

// Match says which requests a rule applies to: every field given must hold.
type Match struct {
	// Route is the route pattern, with or without a method: "POST /login" holds for a POST
	// routed by "POST /login" or "/login" (net/http), or by "/login" (Gin's FullPath, which
	// has no method: the request's is read); "/login" holds whatever the method.
	Route      string
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

	policy       *Policy
	method, path string // of Match.Route
	keys         []namedKey
}

// splitRoute returns the method and the rest of a route pattern: "POST /login" is "POST"
// and "/login", "/login" has no method.
func splitRoute(route string) (method, path string) {
	i := strings.IndexAny(route, " \t")
	if i < 0 {
		return "", route
	}
	return route[:i], strings.TrimLeft(route[i+1:], " \t")
}

type namedKey struct {
	fn    KeyFunc
	value string
}

// parsePriority returns the priority of priority.Level's name name.
func parsePriority(name string) (priority.Level, bool) {
	for _, p := range [...]priority.Level{priority.Critical, priority.Normal, priority.Sheddable} {
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
	// The rules that name a route (or a full method) by its path, and the others, in
	// order: a request is tried against those of its path and the others only.
	byPath map[string][]int
	others []int
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
// it. Match allocates nothing, and tries only the rules of r's route and those that name
// none: its cost does not grow with the rules of other routes.
func (s *Set) Match(r Request) *Policy {
	method, path := splitRoute(r.Route())
	if method == "" {
		method = r.Method() // Gin's FullPath, a pattern without a method
	}
	mine, others := s.byPath[path], s.others
	for len(mine) > 0 || len(others) > 0 {
		var i int
		if len(others) == 0 || len(mine) > 0 && mine[0] < others[0] {
			i, mine = mine[0], mine[1:]
		} else {
			i, others = others[0], others[1:]
		}
		if s.rules[i].matches(r, method, path) {
			return s.rules[i].policy
		}
	}
	return s.def
}

// AppendLimits appends the limits r is under to dst and returns the result: one per limit
// of the policy Match finds, each with the policy's name, cost and r's key under it. The
// Key is empty for a policy that names none (the middleware gives its default key) and
// when the key function fails (a middleware limits it under its UnkeyedKey and reports
// it). It allocates nothing when dst has room.
func (s *Set) AppendLimits(dst []ratelimit.Request, r Request) []ratelimit.Request {
	p := s.Match(r)
	if p == nil {
		return dst
	}
	key, err := p.KeyOf(r)
	if err != nil {
		key = ""
	}
	for _, l := range p.Limits {
		dst = append(dst, ratelimit.Request{Key: key, Limit: l, N: p.Cost, Name: p.Name})
	}
	return dst
}

// matches reports whether the rule holds for r, routed by method and path (its route's).
func (rule *Rule) matches(r Request, method, path string) bool {
	m := &rule.Match
	if rule.path != "" && (path != rule.path || rule.method != "" && method != rule.method) {
		return false
	}
	if m.Method != "" && r.Method() != m.Method ||
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
