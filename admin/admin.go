// Package admin is an http.Handler to look at and act on the buckets of a rules file's
// policies: list the policies and the rules' version, read a key's state under a policy
// (Peek: remaining, reset after), reset it, refund n tokens. It refuses every request
// unless the program gives it an authorization function, never lists keys it was not asked
// about, and never logs one.
//
//	GET  /policies                          {"version": "7", "policies": [{"name": …, …}]}
//	GET  /policies/{policy}/keys/{key}      for each of the policy's limits, what a request of
//	                                        the key would be answered now (Peek)
//	POST /policies/{policy}/keys/{key}/reset
//	POST /policies/{policy}/keys/{key}/refund?n=2
//
// Mount it under a prefix with http.StripPrefix, on an address that only operators reach.
package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/bucket"
	"github.com/sluice-go/ratelimit/internal/nilarg"
	"github.com/sluice-go/ratelimit/rules"
)

// bucketKey is the bucket key the middleware decides key with under the i-th limit of p:
// a shadow bucket when p is in shadow mode or the middleware is (WithShadow).
func (h *Handler) bucketKey(p rules.Policy, key string, i int, l ratelimit.Limit) string {
	return bucket.Name{Policy: p.Name, Limit: i, Keep: l.KeepUsage, Shadow: h.shadow || p.Shadow}.Key(key)
}

// Option configures a Handler.
type Option func(*Handler)

// WithShadow says that the middleware deciding the policies runs in shadow mode (its own
// WithShadow), so that the handler reads and adjusts the buckets it decides with: every
// policy's shadow buckets. Without it, only a policy the rules put in shadow mode has its
// shadow buckets read.
func WithShadow() Option { return func(h *Handler) { h.shadow = true } }

// Handler serves the admin endpoints; New builds one.
type Handler struct {
	limiter   ratelimit.Inspector
	rules     *rules.Rules
	authorize func(*http.Request) bool
	shadow    bool
	mux       *http.ServeMux
}

// New returns the admin handler of the policies of rs, whose buckets l holds (the limiter
// the middleware decides with). authorize says whether a request may be served (check a
// token, a client certificate); a request it refuses gets 403. New panics if any argument
// is nil, or holds a nil pointer, for there is no default that lets anyone in, and if l
// cannot inspect buckets (a ratelimit.Inspector, found through any wrapper with
// ratelimit.As).
func New(l ratelimit.Limiter, rs *rules.Rules, authorize func(*http.Request) bool, opts ...Option) *Handler {
	if nilarg.Is(l) || rs == nil || authorize == nil {
		panic("admin: New: nil Limiter, Rules or authorization function")
	}
	ins, ok := ratelimit.As[ratelimit.Inspector](l)
	if !ok {
		panic(fmt.Sprintf("admin: New: %T cannot inspect buckets (ratelimit.Inspector)", l))
	}
	h := &Handler{limiter: ins, rules: rs, authorize: authorize, mux: http.NewServeMux()}
	for _, o := range opts {
		o(h)
	}
	h.mux.HandleFunc("GET /policies", h.list)
	h.mux.HandleFunc("GET /policies/{policy}/keys/{key}", h.peek)
	h.mux.HandleFunc("POST /policies/{policy}/keys/{key}/reset", h.reset)
	h.mux.HandleFunc("POST /policies/{policy}/keys/{key}/refund", h.refund)
	return h
}

// ServeHTTP serves r if authorize allows it, and 403 otherwise.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.authorize(r) {
		writeJSON(w, http.StatusForbidden, errorBody{"forbidden"})
		return
	}
	h.mux.ServeHTTP(w, r)
}

type errorBody struct {
	Error string `json:"error"`
}

type policyBody struct {
	Name        string   `json:"name"`
	Limits      []string `json:"limits"`
	Key         string   `json:"key"`
	Cost        int      `json:"cost,omitempty"`
	Priority    string   `json:"priority,omitempty"`
	Shadow      bool     `json:"shadow,omitempty"`
	Concurrency int      `json:"concurrency,omitempty"`
}

// stateBody is what a request of cost 1 would be answered now, under one limit (Peek):
// whether it would pass, the tokens it would leave, how long it would wait. Full says that
// the bucket holds its whole Burst: nothing is spent, as for a key never seen (a mistyped
// one, say), or one whose bucket has refilled; a limiter keeps no record of which.
type stateBody struct {
	Limit      string  `json:"limit"`
	Allowed    bool    `json:"allowed"`
	Remaining  int     `json:"remaining"`
	RetryAfter float64 `json:"retry_after_seconds"`
	Full       bool    `json:"full,omitempty"`
}

func (h *Handler) list(w http.ResponseWriter, _ *http.Request) {
	set := h.rules.Set()
	out := struct {
		Version  string       `json:"version"`
		Policies []policyBody `json:"policies"`
	}{Policies: []policyBody{}}
	if set != nil {
		out.Version = set.Version
		for _, name := range set.Policies() {
			p, _ := set.Policy(name)
			pb := policyBody{Name: p.Name, Key: p.Key, Cost: p.Cost, Shadow: p.Shadow, Concurrency: p.Concurrency}
			if p.HasPriority {
				pb.Priority = p.Priority.String()
			}
			for _, l := range p.Limits {
				// as the rules file writes it: its policies all keep their usage
				l.KeepUsage = false
				pb.Limits = append(pb.Limits, l.String())
			}
			out.Policies = append(out.Policies, pb)
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// policy returns the policy r names, having answered 404 when there is none.
func (h *Handler) policy(w http.ResponseWriter, r *http.Request) (rules.Policy, bool) {
	set := h.rules.Set()
	if set != nil {
		if p, ok := set.Policy(r.PathValue("policy")); ok {
			return p, true
		}
	}
	writeJSON(w, http.StatusNotFound, errorBody{"no such policy"})
	return rules.Policy{}, false
}

func (h *Handler) peek(w http.ResponseWriter, r *http.Request) {
	p, ok := h.policy(w, r)
	if !ok {
		return
	}
	h.states(w, r.Context(), p, r.PathValue("key"))
}

// states answers the state of each of p's limits for key.
func (h *Handler) states(w http.ResponseWriter, ctx context.Context, p rules.Policy, key string) {
	out := []stateBody{}
	for i, l := range p.Limits {
		res, err := h.limiter.Peek(ctx, h.bucketKey(p, key, i, l), l, 1)
		if err != nil {
			writeError(w, err)
			return
		}
		shown := l
		shown.KeepUsage = false // as in /policies
		// A request of cost 1 would leave Burst-1 whole tokens only in a full bucket.
		full := res.Allowed && res.Remaining == l.Burst-1
		out = append(out, stateBody{Limit: shown.String(), Allowed: res.Allowed, Remaining: res.Remaining,
			RetryAfter: res.RetryAfter.Round(time.Millisecond).Seconds(), Full: full})
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) reset(w http.ResponseWriter, r *http.Request) {
	p, ok := h.policy(w, r)
	if !ok {
		return
	}
	key := r.PathValue("key")
	for i, l := range p.Limits {
		if err := h.limiter.Reset(r.Context(), h.bucketKey(p, key, i, l), l); err != nil {
			writeError(w, err)
			return
		}
	}
	h.states(w, r.Context(), p, key)
}

func (h *Handler) refund(w http.ResponseWriter, r *http.Request) {
	p, ok := h.policy(w, r)
	if !ok {
		return
	}
	n, err := strconv.Atoi(r.URL.Query().Get("n"))
	if err != nil || n < 1 {
		writeJSON(w, http.StatusBadRequest, errorBody{"n must be a whole number of tokens, at least 1"})
		return
	}
	key := r.PathValue("key")
	for i, l := range p.Limits {
		// The zero Charge: an operator's refund, to the bucket's current state.
		if _, err := h.limiter.Refund(r.Context(), h.bucketKey(p, key, i, l), l, n, ratelimit.Charge{}); err != nil {
			writeError(w, err)
			return
		}
	}
	h.states(w, r.Context(), p, key)
}

// writeError answers a limiter's error: 400 for a request the limiter refuses as it is (a
// key too long), 503 otherwise. The errors of this module name no key.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusServiceUnavailable
	if errors.Is(err, args.ErrKeyEmpty) || errors.Is(err, args.ErrKeyTooLong) {
		status = http.StatusBadRequest
	}
	writeJSON(w, status, errorBody{fmt.Sprint(err)})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
