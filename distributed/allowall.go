package distributed

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/priority"
)

// ErrCrossSlot is wrapped by the error AllowAll returns under CrossSlotRefuse for keys in
// different hash slots. It wraps ratelimit.ErrInvalidArgument: the request list is refused
// as it is, a mistake of the caller that says nothing of Redis's health (fallback does not
// count it as a failure of its primary, and the middlewares refuse the request whatever
// their error policy).
var ErrCrossSlot = fmt.Errorf("%w: keys in different hash slots", args.ErrInvalidRequest)

var _ ratelimit.MultiLimiter = (*Limiter)(nil)

// AllowAll decides reqs together, all or nothing, as ratelimit.MultiLimiter says: every bucket
// is charged or none is, and each Result is what AllowN alone would have said. Every request
// is decided at the priority ctx carries, each keeping its own bucket's reserve; an N above
// the burst left to that priority is refused with ratelimit.ErrExceedsBurst.
//
// The limits may name different algorithms: each bucket is decided by its own, in the same
// script. Keys in one hash slot are decided by one script in one round trip, atomically: always on
// a single server or behind Sentinel, and on a Cluster or a Ring when the keys carry the same
// hash tag ("{user:42}:second"). Keys in different slots of a Cluster or a Ring are decided
// per slot, atomically within each, slots in ascending order; when a slot denies, the slots
// decided before it are refunded in the same call, so nothing stays charged. Meanwhile, for
// about a round trip per slot, those buckets hold tokens that are about to come back, and a
// concurrent caller may be denied by them: a transient denial, never an excess admission.
// WithCrossSlot(CrossSlotRefuse) refuses such requests with ErrCrossSlot instead.
// https://github.com/sluice-go/ratelimit/blob/main/docs/limits.md has the details and
// examples.
//
// If Redis fails while slots are decided in turn, the error is returned and the slots
// already charged are refunded; a slot whose answer was lost stays charged, if it was, which
// can only deny more. A refund that fails leaves its tokens taken until they refill.
//
// A limit with a warm-up (ratelimit.Limit.Warmup) is refused, as bad input naming its
// entry, with an error wrapping ratelimit.ErrNotSupported (see args.CheckAll). Peek, Refund
// and Reset take one.
func (l *Limiter) AllowAll(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, error) {
	mr := ratelimit.MultiResult{Results: make([]ratelimit.Result, len(reqs))}
	if l.closed.Load() {
		return mr, ratelimit.ErrClosed
	}
	p := priority.From(ctx)
	if i, err := l.checkAll(reqs, p); err != nil {
		mr.Binding = max(i, 0)
		for j := range reqs {
			mr.Results[j].Limit = reqs[j].Limit
		}
		return mr, err
	}
	var groups []group
	for i, r := range reqs {
		if r.Limit == (ratelimit.Limit{}) {
			mr.Results[i] = ratelimit.Result{Allowed: true}
			continue
		}
		alg := l.algorithmFor(r.Limit)
		key := l.key(r.Key, alg.tag, r.Limit)
		s := 0
		if l.sharded {
			s = slot(key)
		}
		g := slices.IndexFunc(groups, func(g group) bool { return g.slot == s })
		if g < 0 {
			groups = append(groups, group{slot: s})
			g = len(groups) - 1
		}
		n := max(r.N, 1)
		reserve, _ := args.Reserve(l.reserves, p, r.Limit, n) // checkAll has refused an error
		groups[g].add(i, key, r.Limit, n, alg, reserve)
	}
	if len(groups) > 1 && l.crossSlot == CrossSlotRefuse {
		return mr, fmt.Errorf("distributed: AllowAll: %w: %d slots", ErrCrossSlot, len(groups))
	}
	slices.SortFunc(groups, func(a, b group) int { return cmp.Compare(a.slot, b.slot) })

	mr.Allowed = true
	for g := range groups {
		vals, err := groups[g].run(ctx, l, "all", "")
		if err != nil {
			l.rollback(ctx, groups[:g])
			return failed(mr, reqs), err
		}
		groups[g].read(vals, &mr, reqs)
		if vals[0] == 1 {
			continue
		}
		// Denied: give back what the slots before took, then learn what AllowN alone would
		// say of the slots after, without taking anything.
		mr.Allowed = false
		l.rollback(ctx, groups[:g])
		for _, later := range groups[g+1:] {
			vals, err := later.run(ctx, l, "peek", "")
			if err != nil {
				return failed(mr, reqs), err
			}
			later.read(vals, &mr, reqs)
		}
		break
	}
	if mr.Allowed {
		for _, g := range groups {
			for _, i := range g.indexes {
				mr.Results[i].Charge.At = instant(g.at)
			}
		}
	}
	args.Bind(&mr, reqs)
	return mr, nil
}

// checkAll checks reqs, to be decided at priority p, before any round trip (see
// args.CheckAll).
func (l *Limiter) checkAll(reqs []ratelimit.Request, p priority.Level) (int, error) {
	return args.CheckAll("distributed: AllowAll", reqs, l.algorithm, func(i int) error {
		r := &reqs[i]
		if err := args.Check(r.Key, r.Limit, max(r.N, 1)); err != nil {
			return err
		}
		if err := l.ValidateLimit(r.Limit); err != nil {
			return err
		}
		_, err := args.Reserve(l.reserves, p, r.Limit, max(r.N, 1))
		return err
	})
}

// rollback gives back what groups took, each at the instant it was charged. It runs even
// when ctx has ended (the caller has gone; the tokens must still come back), within the
// limiter's own deadline. A group whose refund fails keeps its tokens until they refill.
func (l *Limiter) rollback(ctx context.Context, groups []group) {
	ctx = context.WithoutCancel(ctx)
	for _, g := range groups {
		_, _ = g.run(ctx, l, "refund", strconv.FormatInt(g.at, 10))
	}
}

// failed is the answer when Redis could not decide: nothing allowed, each Result with only
// its Limit.
func failed(mr ratelimit.MultiResult, reqs []ratelimit.Request) ratelimit.MultiResult {
	for i := range reqs {
		mr.Results[i] = ratelimit.Result{Limit: reqs[i].Limit}
	}
	mr.Allowed = false
	return mr
}

// group is the requests of one hash slot, decided by one script.
type group struct {
	slot    int
	indexes []int // into the caller's requests
	keys    []string
	limits  []ratelimit.Limit
	// the algorithm's tag, rate, burst, cost, the algorithm's own argument and the reserve, for
	// each key
	perKey []any
	at     int64 // the instant the group was charged (µs since 2020), for its refund
}

// add appends request i, whose bucket is key, which must leave reserve tokens in it.
func (g *group) add(i int, key string, limit ratelimit.Limit, n int, alg algorithm, reserve int) {
	g.indexes = append(g.indexes, i)
	g.keys = append(g.keys, key)
	g.limits = append(g.limits, limit)
	var extra any = ""
	if alg.args != nil {
		extra = alg.args(nil, limit)[0]
	}
	g.perKey = append(g.perKey, alg.tag, limit.Rate, limit.Burst, n, extra, reserve)
}

// run runs multi.lua in mode on the group's keys, and checks that the answer has every
// key's values.
func (g *group) run(ctx context.Context, l *Limiter, mode, at string) ([]int64, error) {
	argv := append([]any{mode, at}, g.perKey...)
	if l.now != nil {
		argv = append(argv, l.clientNow(), l.skew)
	}
	vals, err := l.run(ctx, multi.on(l.now != nil), g.keys, argv, nil)
	if err != nil {
		return nil, invalidState(err)
	}
	if len(vals) != 2+5*len(g.keys) {
		return nil, fmt.Errorf("distributed: the script returned %d values for %d keys", len(vals), len(g.keys))
	}
	return vals, nil
}

// read fills the group's Results from multi.lua's answer, and remembers when it was decided.
func (g *group) read(vals []int64, mr *ratelimit.MultiResult, reqs []ratelimit.Request) {
	g.at = vals[1]
	for j, i := range g.indexes {
		mr.Results[i] = resultOf(vals[2+5*j:7+5*j], reqs[i].Limit)
	}
}
