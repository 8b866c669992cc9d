package local

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

var _ ratelimit.MultiLimiter = (*Limiter)(nil)

// AllowAll decides reqs together, all or nothing, as ratelimit.MultiLimiter says: every
// bucket is charged or none is, and each Result is what AllowN alone would have said.
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
// (cap(results) ≥ len(reqs)): a caller that reuses one slice from call to call decides
// several limits, up to 8, without allocating.
func (l *Limiter) AllowAllInto(_ context.Context, reqs []ratelimit.Request, results []ratelimit.Result) (ratelimit.MultiResult, error) {
	if cap(results) < len(reqs) {
		results = make([]ratelimit.Result, len(reqs))
	}
	mr := ratelimit.MultiResult{Results: results[:len(reqs)]}
	var d decision
	d.init(len(reqs))
	i, err := args.CheckAll("local: AllowAll", reqs, func(i int, r ratelimit.Request) error {
		var err error
		d.window[i], err = l.validate(r.Key, r.Limit, max(r.N, 1))
		return err
	})
	if err == nil && l.closed.Load() { // every entry skipped: validate never said so
		err = ratelimit.ErrClosed
	}
	if err != nil {
		mr.Binding = max(i, 0)
		for j := range reqs {
			mr.Results[j] = ratelimit.Result{Limit: reqs[j].Limit}
		}
		return mr, err
	}
	mr.Allowed = l.store.decideAll(&d, reqs, l.micros(), mr.Results)
	args.Bind(&mr, reqs)
	return mr, nil
}

// decision is the working state of one AllowAll: each entry's window and bucket, and the
// buckets held. Up to 8 entries it lives on the caller's stack.
type decision struct {
	window []int64 // each entry's window (window algorithms), µs
	at     []int   // each entry's index in held, or skipped, or refused
	held   []held  // one per bucket
	order  []int   // indexes into held, in the order the buckets are taken
	small  struct {
		window [8]int64
		at     [8]int
		held   [8]held
		order  [8]int
	}
}

const (
	skipped = -1 // an entry with the zero Limit
	refused = -2 // an entry that found no bucket, nor an overflow bucket (see decideOverflow)
)

// held is one bucket of an AllowAll.
type held struct {
	b     *bucket
	limit ratelimit.Limit
	w     int64
	n     int    // the tokens of the entries on this bucket
	old   uint64 // the word's state, set aside while the word is lockedWord
	next  uint64 // the word's state if every bucket admits
	v     verdict
	delay time.Duration
}

func (d *decision) init(n int) {
	if n <= len(d.small.at) {
		d.window, d.at = d.small.window[:n], d.small.at[:n]
		d.held, d.order = d.small.held[:0], d.small.order[:0]
		return
	}
	d.window, d.at = make([]int64, n), make([]int, n)
	d.held, d.order = make([]held, 0, n), make([]int, 0, n)
}

// decideAll decides reqs at u, all or nothing, writes each entry's Result into results and
// reports whether they were allowed.
func (s *store) decideAll(d *decision, reqs []ratelimit.Request, u int64, results []ratelimit.Result) bool {
	for !s.holdAll(d, reqs, u) {
		// A bucket was dropped between its lookup and its hold: look them up again. Only a
		// full bucket is dropped, and the lookup creates a live one, so this ends.
	}
	allowed := !slices.Contains(d.at, refused)
	for i := range d.held {
		h := &d.held[i]
		n := min(h.n, h.limit.Burst)
		if h.b.lk != nil {
			h.v, h.delay = h.b.lk.st.peek(h.limit, u, n)
		} else {
			h.v, h.next = s.decideWord(h.old, h.limit, u, h.w, n)
		}
		if h.n > n {
			// Entries summed on one overflow bucket that cannot all pass: asked for the whole
			// bucket, and denied however full it is.
			h.v.allowed = false
			h.v.retry = max(h.v.retry, h.v.reset, time.Microsecond)
		}
		allowed = allowed && h.v.allowed
	}
	for k := len(d.order) - 1; k >= 0; k-- {
		h := &d.held[d.order[k]]
		if allowed && h.b.lk != nil {
			h.b.lk.st.take(h.limit, u, h.n, unbounded) // what peek said, under the same hold
		}
		h.release(allowed)
	}
	for i, r := range reqs {
		switch j := d.at[i]; j {
		case skipped:
			results[i] = ratelimit.Result{Allowed: true}
		case refused:
			results[i] = overflowRefusal(r.Limit).result(r.Limit, 0)
		default:
			results[i] = d.held[j].v.result(r.Limit, d.held[j].delay)
		}
	}
	return allowed
}

// holdAll finds or creates the bucket of each entry of reqs and holds them all, in a fixed
// order. It reports false, holding nothing, if one of them was dropped meanwhile.
func (s *store) holdAll(d *decision, reqs []ratelimit.Request, u int64) bool {
	d.held, d.order = d.held[:0], d.order[:0]
	for i, r := range reqs {
		if r.Limit == (ratelimit.Limit{}) {
			d.at[i] = skipped
			continue
		}
		b := s.bucketFor(r.Key, r.Limit, u, d.window[i])
		if b == nil {
			d.at[i] = refused
			continue
		}
		j := slices.IndexFunc(d.held, func(h held) bool { return h.b == b })
		if j < 0 { // a bucket met twice is an overflow bucket, at the cap
			d.held = append(d.held, held{b: b, limit: r.Limit, w: d.window[i]})
			d.order = append(d.order, len(d.held)-1)
			j = len(d.held) - 1
		}
		d.held[j].n += max(r.N, 1)
		d.at[i] = j
	}
	// By key, then limit: two AllowAlls wanting the same buckets take them in the same
	// order, so that neither holds one the other waits for while it waits.
	slices.SortFunc(d.order, func(i, j int) int {
		a, b := d.held[i].b, d.held[j].b
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.rate, b.rate), cmp.Compare(a.burst, b.burst))
	})
	for k, i := range d.order {
		if !d.held[i].hold() {
			for _, j := range slices.Backward(d.order[:k]) {
				d.held[j].release(false)
			}
			return false
		}
	}
	return true
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
