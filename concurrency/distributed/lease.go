package distributed

import (
	"context"
	"encoding/hex"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit/concurrency"
)

// lease is one permit held in Redis, from the acquisition that names it to its release.
// Leases are pooled: the arguments of its two commands are boxed once, when the lease is
// made, and point into it.
type lease struct {
	l        *Limiter
	key      string // the caller's key
	rkey     string // the Redis key: prefix + key
	rbuf     []byte // the Redis key of the last key asked for, built to look its queue up
	max      int    // the call's max, for Stats
	id       [32]byte
	gen      atomic.Uint64 // moves on at each release, so that a stale Permit frees nothing
	spare    bool          // permits were still free after the grant, as the script said
	renewed  time.Time     // when the last successful renewal (or the grant) was sent
	renewing bool          // a renewal of it is on its way (guarded by l.mu)
	dl       deadline      // the context of the lease's round trips
	aargs    [7]any        // "evalsha", hash, 1, rkey, &max, ttl, id
	rargs    [8]any        // "evalsha", hash, 1, rkey, ttl, shard flag, limiter's id, id

	prev, next *lease     // in the limiter's held or pending list
	in         *leaseList // the list holding the lease, nil when none
}

func newLease(l *Limiter) *lease {
	ls := &lease{l: l}
	ls.aargs = [7]any{"evalsha", acquireSHA, 1, "", &ls.max, l.ttlArg, ls.id[:]}
	ls.rargs = [8]any{"evalsha", releaseSHA, 1, "", l.ttlArg, l.shardArg, l.idArg, ls.id[:]}
	copy(ls.id[:16], l.id[:])
	return ls
}

// newLease returns a lease for key and max, its id still to be set, with whether anyone
// of this limiter waits for the key and the count of the key's wake-ups (see enter). The
// Redis key, and its box in the commands' arguments, are the key's queue's, made once per
// key: a lease reused for another key finds them without allocating.
func (l *Limiter) newLease(key string, max int) (ls *lease, queued bool, wakes uint64) {
	ls = l.leases.Get().(*lease)
	ls.max = max
	same := ls.key == key
	l.mu.Lock()
	var q *keyQueue
	if same {
		q = l.queues[ls.rkey]
	} else {
		ls.rbuf = append(append(ls.rbuf[:0], l.prefix...), key...)
		q = l.queues[string(ls.rbuf)]
	}
	if q == nil {
		q = newKeyQueue(l.prefix + key)
		l.queues[q.rkey] = q
	}
	q.touched = true
	queued, wakes = q.waiters.Len() > 0, q.wakes
	l.mu.Unlock()
	if !same {
		ls.key, ls.rkey = key, q.rkey
		ls.aargs[3], ls.rargs[3] = q.rkeyArg, q.rkeyArg
	}
	return ls, queued, wakes
}

// name gives ls the id of its next acquisition. The sequence is the value the increment
// returned, never one read after it: two callers that read it after both increments would
// share an id, and acquire.lua grants a live id again without counting it (a resent call),
// so the fleet would hold one permit more than Redis counts.
func (l *Limiter) name(ls *lease) { ls.setID(l.seq.Add(1)) }

// setID names the lease's next acquisition: the limiter's id and seq, 32 bytes in all, so
// that the id's box never changes.
func (ls *lease) setID(seq uint64) {
	var b [8]byte
	for i := range b {
		b[i] = byte(seq >> (56 - 8*i))
	}
	hex.Encode(ls.id[16:], b[:])
}

func (l *Limiter) putLease(ls *lease) {
	ls.dl = deadline{}
	l.leases.Put(ls)
}

// ReleasePermit frees the permit, once: it stops renewing it and deletes it from Redis,
// which wakes the waiters of its key, here at once and in other processes through Redis. A
// release Redis does not confirm is retried in the background until it is, or until Close.
// The outcome is ignored, the Redis backend having no adaptive limit.
func (ls *lease) ReleasePermit(gen uint64, _ concurrency.Outcome) {
	if !ls.gen.CompareAndSwap(gen, gen+1) {
		return
	}
	l := ls.l
	l.mu.Lock()
	l.held.remove(ls)
	if ls.renewing {
		l.mu.Unlock()
		l.releaseLater(ls) // after the renewal: see renewAll
		return
	}
	l.mu.Unlock()
	if _, err := l.eval(context.Background(), l.bgBound, ls, releaseScript, ls.rargs[:]); err != nil {
		l.releaseLater(ls)
		return
	}
	rkey := ls.rkey
	l.putLease(ls)
	l.wakeOne(rkey)
}

// releaseLater hands ls to the background loop, which releases it as soon as Redis
// answers.
// After Close nothing would retry it: the lease then ends with its TTL.
func (l *Limiter) releaseLater(ls *lease) {
	l.mu.Lock()
	if l.life.Err() != nil {
		l.mu.Unlock()
		return
	}
	l.pending.push(ls)
	l.mu.Unlock()
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// leaseList is a doubly linked list of leases, so that one leaves from anywhere in it at
// once and without allocating.
type leaseList struct {
	head *lease
	n    int
}

func (q *leaseList) push(ls *lease) {
	ls.in = q
	ls.prev, ls.next = nil, q.head
	if q.head != nil {
		q.head.prev = ls
	}
	q.head = ls
	q.n++
}

// remove takes ls out of q, if it is there.
func (q *leaseList) remove(ls *lease) {
	if ls.in != q {
		return
	}
	ls.in = nil
	if ls.prev != nil {
		ls.prev.next = ls.next
	} else {
		q.head = ls.next
	}
	if ls.next != nil {
		ls.next.prev = ls.prev
	}
	ls.prev, ls.next = nil, nil
	q.n--
}

// take empties q and returns its leases.
func (q *leaseList) take() []*lease {
	out := make([]*lease, 0, q.n)
	for ls := q.head; ls != nil; ls = ls.next {
		out = append(out, ls)
	}
	for _, ls := range out {
		ls.prev, ls.next, ls.in = nil, nil, nil
	}
	q.head, q.n = nil, 0
	return out
}
