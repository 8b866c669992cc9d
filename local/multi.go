package local

import (
	"context"
	"runtime"
	"slices"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/priority"
)

var _ ratelimit.MultiLimiter = (*Limiter)(nil)

// AllowAll decides reqs together, all or nothing, as ratelimit.MultiLimiter says: every
// bucket is charged or none is, and each Result is what AllowN alone would have said. The
// limits may name different algorithms: each bucket is decided by its own.
//
// It holds the buckets of reqs while it decides, taking them one at a time in a fixed order
// (so that two AllowAlls never wait for each other in a circle), takes no lock shared with
// other buckets, and lets go of them once every bucket is charged or none is: no other
// decision sees some charged and others not. An AllowN meeting a held bucket waits for it.
// Like AllowN, it does not look at ctx.
//
// At the cap on buckets (WithMaxBuckets), keys that find no room share their limit's
// overflow bucket; entries that land on one overflow bucket are decided there as one
// request for their summed cost.
func (l *Limiter) AllowAll(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, error) {
	return l.AllowAllInto(ctx, reqs, nil)
}

// AllowAllInto is AllowAll, writing the Results into results when it has room for them
// (cap(results) ≥ len(reqs)): a caller that reuses one slice from call to call decides up to
// 4 limits without allocating.
func (l *Limiter) AllowAllInto(ctx context.Context, reqs []ratelimit.Request, results []ratelimit.Result) (ratelimit.MultiResult, error) {
	if cap(results) < len(reqs) {
		results = make([]ratelimit.Result, len(reqs))
	}
	mr := ratelimit.MultiResult{Results: results[:len(reqs)]}
	// The working state: each entry's window, its algorithm, and the index of its bucket in
	// hs; the buckets, and the order to hold them in. Up to 4 entries it stays on the stack.
	var small struct {
		window [4]int64
		alg    [4]ratelimit.Algorithm
		at     [4]int
		held   [4]held
		order  [4]int
	}
	var window []int64
	var alg []ratelimit.Algorithm
	var at, order []int
	var hs []held
	if n := len(reqs); n <= len(small.at) {
		window, alg, at, hs, order = small.window[:n], small.alg[:n], small.at[:n], small.held[:n], small.order[:n]
	} else {
		window, alg, at, hs, order = make([]int64, n), make([]ratelimit.Algorithm, n), make([]int, n), make([]held, n), make([]int, n)
	}
	p := priority.From(ctx)
	i, err := args.CheckAll("local: AllowAll", reqs, l.algorithm, func(i int) error {
		r := &reqs[i]
		n := max(r.N, 1)
		alg[i] = r.Limit.Algorithm
		if alg[i] == ratelimit.DefaultAlgorithm {
			alg[i] = l.algorithm
		}
		if alg[i] == ratelimit.TokenBucket && !r.Limit.KeepUsage && args.Valid(r.Key, r.Limit, n) && args.RefillOK(r.Limit) && resolutionOK(r.Limit) {
			window[i] = 0 // as AllowN: a token bucket needs no more checks (Close is below)
		} else {
			var err error
			if _, window[i], err = l.validate(r.Key, r.Limit, n); err != nil {
				return err
			}
		}
		if p == priority.Critical {
			return nil
		}
		_, err := args.Reserve(l.reserves, p, r.Limit, n)
		return err
	})
	if err == nil && l.closed.Load() {
		err = ratelimit.ErrClosed
	}
	if err != nil {
		mr.Binding = max(i, 0)
		for j := range reqs {
			mr.Results[j] = ratelimit.Result{Limit: reqs[j].Limit}
		}
		return mr, err
	}
	u := l.micros()
	var nh int
	for {
		nh = l.store.findAll(reqs, window, alg, at, hs, order, u, l.reserves, p)
		if holdAll(hs, order[:nh]) {
			break
		}
		// A bucket was dropped between its lookup and its hold: look them up again. Only a
		// full bucket is dropped, and the lookup makes a live one, so this ends.
	}
	mr.Allowed = l.store.decideHeld(hs[:nh], u) && !slices.Contains(at, refused)
	releaseAll(hs, order[:nh], u, mr.Allowed)
	for i := range reqs {
		switch j, limit := at[i], reqs[i].Limit; j {
		case skipped:
			mr.Results[i] = ratelimit.Result{Allowed: true}
		case refused:
			mr.Results[i] = overflowRefusal(limit).result(limit, 0)
		default:
			mr.Results[i] = hs[j].v.result(limit, hs[j].delay)
			if mr.Allowed {
				mr.Results[i].Charge.At = chargeAt(u)
			}
		}
	}
	args.Bind(&mr, reqs)
	return mr, nil
}

const (
	skipped = -1 // an entry with the zero Limit
	refused = -2 // an entry that found no bucket, nor an overflow bucket (see decideOverflow)
)

// held is one bucket of an AllowAll.
type held struct {
	b     *bucket
	hash  uint64          // of its key, to order buckets by
	limit ratelimit.Limit // what the bucket is decided under: its own, or less a reserve
	w     int64
	n     int    // the tokens of the entries on this bucket
	old   uint64 // the word's state, set aside while the word is lockedWord
	next  uint64 // the word's state if every bucket admits
	v     verdict
	delay time.Duration
}

// findAll finds or makes the bucket of each entry of reqs, whose windows are window and
// algorithms alg, at u;
// fills hs with them, one per bucket, each with the limit it is decided under at priority p
// (see decideAt), and order with their indexes in the order they are to be held; sets each
// entry's index in hs in at (or skipped, or refused); and returns how many buckets there
// are.
func (s *store) findAll(reqs []ratelimit.Request, window []int64, alg []ratelimit.Algorithm, at []int, hs []held, order []int, u int64, rs priority.Reserves, p priority.Level) int {
	nh := 0
	for i := range reqs {
		r := &reqs[i]
		if r.Limit == (ratelimit.Limit{}) {
			at[i] = skipped
			continue
		}
		limit := r.Limit
		limit.Algorithm = alg[i]
		b, h := s.bucketFor(r.Key, limit, u, window[i])
		if b == nil {
			at[i] = refused
			continue
		}
		j := 0
		for j < nh && hs[j].b != b { // a bucket met twice is an overflow bucket, at the cap
			j++
		}
		if j == nh { // field by field: a held built whole is copied once more
			hj := &hs[j]
			hj.b, hj.hash, hj.limit, hj.w, hj.n = b, h, limit, window[i], 0
			if p != priority.Critical {
				reserve, _ := args.Reserve(rs, p, r.Limit, max(r.N, 1)) // checked by CheckAll
				hj.limit.Burst -= reserve
			}
			nh++
		}
		hs[j].n += max(r.N, 1)
		at[i] = j
	}
	// By the hash of the key, then key, then limit: two AllowAlls wanting the same buckets
	// take them in the same order, so that neither holds one the other waits for while it
	// waits. An insertion sort: there are few.
	for i := range nh {
		order[i] = i
		for j := i; j > 0 && before(&hs[order[j]], &hs[order[j-1]]); j-- {
			order[j], order[j-1] = order[j-1], order[j]
		}
	}
	return nh
}

// before orders held buckets by the hash of their key, then key, rate, and burst and
// algorithm.
func before(x, y *held) bool {
	if x.hash != y.hash {
		return x.hash < y.hash
	}
	a, b := x.b, y.b
	if a.key != b.key {
		return a.key < b.key
	}
	if a.rate != b.rate {
		return a.rate < b.rate
	}
	return a.kind < b.kind
}

// holdAll holds the buckets of hs in order. It reports false, holding nothing, if one of
// them has been dropped.
func holdAll(hs []held, order []int) bool {
	for k, i := range order {
		if !hs[i].hold() {
			for j := k - 1; j >= 0; j-- {
				hs[order[j]].release(false)
			}
			return false
		}
	}
	return true
}

// decideHeld decides each held bucket at u, charging nothing yet, and reports whether all
// of them admit.
func (s *store) decideHeld(hs []held, u int64) bool {
	allowed := true
	for i := range hs {
		h := &hs[i]
		n := min(h.n, h.limit.Burst)
		if h.b.lk != nil {
			keepWindow(h.b.lk.st, h.w)
			h.v, h.delay = h.b.lk.st.peek(h.limit, u, n)
		} else {
			h.v, h.next = s.decideWord(h.old, h.b.burst(), h.limit, u, h.w, n)
		}
		if h.n > n {
			// Entries summed on one overflow bucket that cannot all pass: asked for the whole
			// bucket, and denied however full it is.
			h.v.allowed = false
			h.v.retry = max(h.v.retry, h.v.reset, time.Microsecond)
		}
		allowed = allowed && h.v.allowed
	}
	return allowed
}

// releaseAll lets go of the buckets of hs, the last held first, having charged them all at
// u if charge, and none otherwise.
func releaseAll(hs []held, order []int, u int64, charge bool) {
	for k := len(order) - 1; k >= 0; k-- {
		h := &hs[order[k]]
		if charge && h.b.lk != nil {
			h.b.lk.st.take(h.limit, u, h.n, unbounded) // what peek said, under the same hold
		}
		h.release(charge)
	}
}

// hold takes the bucket for the AllowAll: its mutex, or its word, set aside in h.old and
// replaced by lockedWord. It reports false, holding nothing, if the bucket is dead.
func (h *held) hold() bool {
	if lk := h.b.lk; lk != nil {
		lk.mu.Lock()
		if lk.dead {
			lk.mu.Unlock()
			return false
		}
		return true
	}
	for {
		old := h.b.word.Load()
		switch old {
		case deadWord:
			return false
		case lockedWord:
			runtime.Gosched() // another AllowAll holds it for a moment
			continue
		}
		if h.b.word.CompareAndSwap(old, lockedWord) {
			h.old = old
			return true
		}
	}
}

// release lets go of the bucket, its word set to the next state if charge, else restored.
func (h *held) release(charge bool) {
	if lk := h.b.lk; lk != nil {
		lk.mu.Unlock()
		return
	}
	if charge {
		h.b.word.Store(h.next)
	} else {
		h.b.word.Store(h.old)
	}
}
