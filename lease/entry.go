package lease

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/observe"
	"github.com/sluice-go/ratelimit/priority"
)

// errGone is what a decision meets on an entry that a sweep or Close has given back: it
// looks the key up again.
var errGone = errors.New("lease: key given back")

// entry is one leased key's state in this instance. The allowance, the deadline and the
// refusal are read without a lock on every decision; the rest belongs to the one request
// in flight, under mu.
type entry struct {
	l     *Limiter
	key   string
	limit ratelimit.Limit
	// allowance is the tokens this instance holds; deadline (l.now) is when they stop
	// being spendable, ahead of their record's end in Redis; refused, when a refused
	// chunk's RetryAfter ends; low, the allowance under which the next chunk is asked for.
	allowance atomic.Int64
	deadline  atomic.Int64
	refused   atomic.Int64
	low       atomic.Int64
	used      atomic.Int64 // the last decision, for going cold
	renewAt   atomic.Int64 // when the record wants renewing
	errUntil  atomic.Int64 // no background request before this, after a failed one
	reset     atomic.Int64 // the bucket's ResetAfter at the last grant, ns
	inflight  atomic.Bool

	mu        sync.Mutex
	flight    chan struct{} // closed when the request in flight is answered; nil when none
	flightErr error         // the answer's error, for those who waited on it
	gone      bool          // given back: the entry takes no more requests
	shards    []shard
	pending   *pending // a request whose answer was lost, sent again as it was
	rate      float64  // this instance's rate on the key, tokens/s
	rtt       int64    // the round trip, ns
	lastLeft  int64    // the allowance after the last grant
	lastAt    int64    // the last grant's answer, l.now
}

// shard is one of the buckets a key is split over (one, unsplit).
type shard struct {
	limit     ratelimit.Limit
	seq       uint64
	remaining int   // the bucket's remaining at the last answer
	at        int64 // that answer, l.now; 0 for never
	claimAt   int64 // when this instance's record in it was last written; 0 for none
}

// pending is a request and when it was first sent.
type pending struct {
	req distributed.LeaseRequest
	at  int64
}

func newEntry(l *Limiter, key string, limit ratelimit.Limit) *entry {
	e := &entry{l: l, key: key, limit: limit}
	k := l.shards
	if limit.Burst < k {
		k = 1
	}
	for i := range k {
		b := limit.Burst / k
		if i < limit.Burst%k {
			b++
		}
		e.shards = append(e.shards, shard{limit: ratelimit.Limit{Rate: limit.Rate / float64(k), Burst: b}})
	}
	// A first chunk of the instance's fair share of a target's refill.
	e.rate = limit.Rate / float64(l.instances)
	e.used.Store(l.now())
	return e
}

// allowN decides n tokens from the allowance, asking Redis for a chunk when it cannot.
func (e *entry) allowN(ctx context.Context, n int) (ratelimit.Result, error) {
	if n > e.shards[len(e.shards)-1].limit.Burst {
		return ratelimit.Result{Limit: e.limit}, fmt.Errorf("lease: %w: a shard's burst is %d (WithShards)",
			ratelimit.ErrExceedsBurst, e.shards[len(e.shards)-1].limit.Burst)
	}
	now := e.l.now()
	e.used.Store(now)
	if res, ok := e.spend(now, n); ok {
		return res, nil
	}
	// A chunk that others waiting on the same request took first is no answer: ask again,
	// a few times, until Redis refuses (or the caller's context ends).
	for range 4 {
		if until := e.refused.Load(); now < until {
			return e.denied(now, n), nil
		}
		if err := e.request(ctx, now, n, true); err != nil {
			return ratelimit.Result{Limit: e.limit}, err
		}
		now = e.l.now()
		if res, ok := e.spend(now, n); ok {
			return res, nil
		}
	}
	return e.denied(now, n), nil
}

// spend takes n tokens of the allowance if it holds them and they are within their lease,
// and asks for the next chunk in the background when the allowance runs low or the record
// wants renewing.
func (e *entry) spend(now int64, n int) (ratelimit.Result, bool) {
	for {
		if now >= e.deadline.Load() {
			// Past the lease: the record gives these back in Redis, so they are never spent.
			e.allowance.Store(0)
			return ratelimit.Result{}, false
		}
		a := e.allowance.Load()
		if a < int64(n) {
			return ratelimit.Result{}, false
		}
		if e.allowance.CompareAndSwap(a, a-int64(n)) {
			left := a - int64(n)
			if (left < e.low.Load() || now >= e.renewAt.Load()) && !e.inflight.Load() && now >= e.errUntil.Load() {
				_ = e.request(context.Background(), now, 0, false)
			}
			return ratelimit.Result{Allowed: true, Limit: e.limit, Remaining: int(min(left, int64(e.limit.Burst))),
				ResetAfter: time.Duration(e.reset.Load())}, true
		}
	}
}

// denied is the Result of a request for n tokens that the allowance cannot cover.
func (e *entry) denied(now int64, n int) ratelimit.Result {
	a := max(e.allowance.Load(), 0)
	retry := time.Duration(e.refused.Load() - now)
	if retry <= 0 {
		retry = time.Duration(math.Ceil(float64(int64(n)-a) / e.limit.Rate * 1e9))
	}
	return ratelimit.Result{Limit: e.limit, Remaining: int(min(a, int64(e.limit.Burst))),
		RetryAfter: max(retry, time.Microsecond), ResetAfter: time.Duration(e.reset.Load())}
}

// request asks Redis for a chunk that covers at least n tokens beside the allowance: in
// the caller's goroutine when wait, waiting for the request in flight if there is one; in
// the background otherwise, unless one is in flight.
func (e *entry) request(ctx context.Context, now int64, n int, wait bool) error {
	e.mu.Lock()
	if e.gone {
		e.mu.Unlock()
		return errGone
	}
	if ch := e.flight; ch != nil {
		e.mu.Unlock()
		if !wait {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
		e.mu.Lock()
		defer e.mu.Unlock()
		return e.flightErr
	}
	p := e.next(now, n)
	ch := make(chan struct{})
	e.flight = ch
	e.inflight.Store(true)
	e.mu.Unlock()
	if wait {
		return e.send(ctx, p, ch)
	}
	e.l.flights.Add(1)
	go func() {
		defer e.l.flights.Done()
		_ = e.send(context.Background(), p, ch)
	}()
	return nil
}

// next returns the request to send, under mu: the lost one again while its record may
// still hold its answer, or a new one for a chunk of the instance's rate times the target,
// within the cap, and at least n beside the allowance.
func (e *entry) next(now int64, n int) *pending {
	if p := e.pending; p != nil && now-p.at < int64(e.l.leaseTime/2) {
		return p
	}
	a := max(e.allowance.Load(), 0)
	if e.lastAt > 0 {
		spent := float64(max(e.lastLeft-a, 0))
		elapsed := max(now-e.lastAt, int64(time.Millisecond))
		e.rate = (e.rate + spent*1e9/float64(elapsed)) / 2
	}
	i := e.fullest(now)
	s := &e.shards[i]
	c := int64(math.Ceil(e.rate * e.l.target.Seconds()))
	c = min(max(c, 1), e.capOf(s.limit))
	want := min(max(c-a, int64(n)-a, 0), int64(s.limit.Burst))
	held := a
	if len(e.shards) > 1 {
		held = 0 // a shard's record holds its own chunk only (see renew)
	}
	s.seq++
	s.claimAt = now
	e.pending = &pending{at: now, req: distributed.LeaseRequest{Instance: e.l.id, Seq: s.seq, Want: int(want),
		Held: int(held), Lease: e.l.leaseTime, Shard: i, Shards: len(e.shards)}}
	return e.pending
}

// capOf is the largest chunk of a bucket of limit: Burst/(CapShare·k), at least 1.
func (e *entry) capOf(limit ratelimit.Limit) int64 {
	return max(int64(limit.Burst)/int64(CapShare*e.l.instances), 1)
}

// fullest returns the shard this instance expects to hold the most now: its remaining at
// the last answer plus its refill since, a shard never asked counting as full.
func (e *entry) fullest(now int64) int {
	best, most := 0, -1.0
	for i, s := range e.shards {
		v := float64(s.limit.Burst)
		if s.at > 0 {
			v = min(float64(s.remaining)+s.limit.Rate*float64(now-s.at)/1e9, v)
		}
		if v > most {
			best, most = i, v
		}
	}
	return best
}

// send runs p on Redis and books its answer.
func (e *entry) send(ctx context.Context, p *pending, ch chan struct{}) error {
	l := e.l
	s := e.shards[p.req.Shard]
	start := l.now()
	g, err := l.backend.Lease(ctx, e.key, s.limit, p.req)
	end := l.now()
	l.observe(ctx, p.req, s.limit, g, err, time.Duration(end-start))
	e.mu.Lock()
	defer func() {
		e.flight, e.flightErr = nil, err
		e.inflight.Store(false)
		close(ch)
		e.mu.Unlock()
	}()
	if err != nil {
		e.errUntil.Store(end + int64(min(l.leaseTime/8, 100*time.Millisecond)))
		return err
	}
	if e.pending == p {
		e.pending = nil
	}
	if g.Stale {
		return nil
	}
	e.rtt = (e.rtt + end - start) / 2
	sh := &e.shards[p.req.Shard]
	sh.remaining, sh.at = g.Remaining, end
	e.reset.Store(int64(g.ResetAfter))
	if g.Tokens > 0 || p.req.Held > 0 {
		// The record now holds all the allowance until p's lease ends (it was written after
		// p was first sent): spend none of it past seven eighths of that.
		e.deadline.Store(p.at + int64(l.leaseTime)*7/8)
		e.renewAt.Store(p.at + int64(l.leaseTime/2))
	}
	left := e.allowance.Add(int64(g.Tokens))
	e.lastLeft, e.lastAt = left, end
	if g.Tokens == 0 && g.RetryAfter > 0 {
		e.refused.Store(end + int64(g.RetryAfter))
	} else {
		e.refused.Store(0)
	}
	// Ask again when what is left would last about two round trips at the instance's rate.
	low := int64(math.Ceil(e.rate * 2 * float64(e.rtt) / 1e9))
	e.low.Store(min(max(low, 1), max(e.capOf(sh.limit)/2, 1)))
	return nil
}

// renew, from the janitor, writes the record of a key whose last one is half a lease old:
// a request for a chunk, which records the allowance anew, or, for a shard of a split key
// whose record holds only its own chunk, the removal of that record.
func (e *entry) renew(now int64) {
	if len(e.shards) == 1 {
		if now >= e.renewAt.Load() && e.allowance.Load() > 0 && !e.inflight.Load() {
			_ = e.request(context.Background(), now, 0, false)
		}
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.flight != nil || e.gone {
		return
	}
	for i := range e.shards {
		s := &e.shards[i]
		if s.claimAt > 0 && now-s.claimAt >= int64(e.l.leaseTime/2) {
			e.leave(i, 0)
		}
	}
}

// release gives the allowance back and removes this instance's records, for Close or a
// key gone cold. It reports false when a request is in flight: the key is kept.
func (e *entry) release() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.flight != nil || e.gone {
		return e.gone
	}
	e.gone = true
	a := e.allowance.Swap(0)
	if e.l.now() >= e.deadline.Load() {
		a = 0 // past its lease: the records give it back
	}
	for i := range e.shards {
		if e.shards[i].claimAt > 0 || (i == 0 && a > 0) {
			e.leave(i, a)
			a = 0
		}
	}
	return true
}

// leave removes this instance's record in shard i, giving back ret tokens, under mu.
func (e *entry) leave(i int, ret int64) {
	s := &e.shards[i]
	s.seq++
	s.claimAt = 0
	req := distributed.LeaseRequest{Instance: e.l.id, Seq: s.seq, Return: int(ret), Lease: e.l.leaseTime,
		Shard: i, Shards: len(e.shards)}
	start := e.l.now()
	g, err := e.l.backend.Lease(context.Background(), e.key, s.limit, req)
	e.l.observe(context.Background(), req, s.limit, g, err, time.Duration(e.l.now()-start))
}

// observe tells the grant observer of one call to Redis.
func (l *Limiter) observe(ctx context.Context, req distributed.LeaseRequest, limit ratelimit.Limit,
	g distributed.LeaseGrant, err error, d time.Duration) {
	if l.observer == nil {
		return
	}
	dec := observe.Decision{Policy: l.policy, Backend: "lease", Lease: true, Cost: req.Want, Limit: limit,
		Priority: priority.Critical, Remaining: g.Tokens, Duration: d}
	switch {
	case err != nil:
		dec.Outcome, dec.ErrorKind, dec.Err, dec.Remaining = observe.OutcomeError, observe.Classify(ctx, err), err, 0
	case g.Tokens == 0 && req.Want > 0:
		dec.Outcome = observe.OutcomeDenied
	}
	l.observer.ObserveDecision(ctx, dec)
}
