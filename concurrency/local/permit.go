package local

import (
	"github.com/sluice-go/ratelimit/concurrency"
	"sync/atomic"
	"time"
)

// release ends h's permit with outcome o, hands the freed permits to waiters, and returns
// h to the pool. It runs once per grant (see holder.ReleasePermit).
func (l *Limiter) release(h *holder, o concurrency.Outcome) {
	sh, e := h.sh, h.e
	var held time.Duration
	if l.aimd != nil {
		held = l.now() - h.start
	}
	sh.mu.Lock()
	e.held--
	if l.aimd != nil {
		l.aimd.Sample(&e.adapt, h.grant, o, held, h.max)
	}
	for e.waiters.Len() > 0 {
		w := e.waiters.Back()
		if l.order == OldestFirst {
			w = e.waiters.Front()
		}
		if e.held >= l.limitOf(e, w.max) {
			break
		}
		e.waiters.Remove(w)
		w.finish(l.grant(sh, e, w.max), nil)
	}
	sh.mu.Unlock()
	h.sh, h.e = nil, nil
	l.holders.Put(h)
}

// holder is a granted permit's state, pooled so that an uncontended Acquire and Release
// allocate nothing. gen is the generation of its current grant: Release moves it on once,
// so a stale copy of an older Permit (whose gen is lower) releases nothing.
type holder struct {
	l     *Limiter
	gen   atomic.Uint64
	sh    *shard
	e     *entry
	max   int
	start time.Duration // grant time, for an adaptive limit
	grant concurrency.AIMDGrant
}

// ReleasePermit frees the permit gen names, if it is the holder's current one.
func (h *holder) ReleasePermit(gen uint64, o concurrency.Outcome) {
	if h.gen.CompareAndSwap(gen, gen+1) {
		h.l.release(h, o)
	}
}
