package distributed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit/concurrency"
	"github.com/sluice-go/ratelimit/internal/waitlist"
)

// keyQueue is this limiter's callers waiting for one Redis key, oldest first. Only the
// first asks Redis again: when a release wakes it, and at the poll interval otherwise.
type keyQueue struct {
	rkey    string // the Redis key
	rkeyArg any    // rkey, boxed once for the commands' arguments
	waiters waitlist.List[waiter, *waiter]
	most    int    // the highest max among the waiters, for Stats
	touched bool   // a caller used the key since the last sweep (dropIdle)
	wakes   uint64 // wake-ups so far: one that comes between a refusal and enter is not lost
}

func newKeyQueue(rkey string) *keyQueue { return &keyQueue{rkey: rkey, rkeyArg: rkey} }

// waiter is one caller in a keyQueue.
type waiter struct {
	waitlist.Links[waiter]
	wake     chan struct{} // ask Redis now: a permit was freed
	promoted chan struct{} // the waiter became the first: it polls from now on
}

// enter puts a caller asking for max at the end of rkey's queue, if it has room, and has
// the subscriber listen to rkey's wake-ups. A wake-up since wakes (read before the
// caller's last refusal) makes it ask again at once.
func (l *Limiter) enter(ctx context.Context, rkey string, max int, wakes uint64) (*waiter, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("distributed: waiting for a permit: %w", err)
	}
	l.mu.Lock()
	if l.closed.Load() {
		l.mu.Unlock()
		return nil, errClosed
	}
	q := l.queues[rkey]
	if q == nil {
		q = newKeyQueue(rkey)
		l.queues[rkey] = q
	}
	if q.waiters.Len() >= l.queue {
		l.mu.Unlock()
		return nil, errFull
	}
	w := &waiter{wake: make(chan struct{}, 1), promoted: make(chan struct{}, 1)}
	if q.waiters.Len() == 0 {
		q.most = 0
	}
	q.waiters.PushBack(w)
	q.most = maxInt(q.most, max)
	q.touched = true
	if q.wakes != wakes {
		signal(w.wake)
	}
	l.mu.Unlock()
	if l.sub != nil {
		l.sub.want(rkey)
	}
	return w, nil
}

// errFull is returned as is: a refusal needs no allocation.
var errFull = fmt.Errorf("distributed: %w", concurrency.ErrQueueFull)

// maxInt is the builtin max, which enter's parameter of that name hides.
func maxInt(a, b int) int { return max(a, b) }

// leave takes w out of rkey's queue. When passOn, or when w leaves with a wake-up it did
// not use, the next waiter asks Redis at once; otherwise a waiter that becomes the first
// starts polling.
func (l *Limiter) leave(w *waiter, rkey string, passOn bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	q := l.queues[rkey]
	wasHead := q.waiters.Front() == w
	q.waiters.Remove(w)
	head := q.waiters.Front()
	if head == nil {
		return
	}
	select {
	case <-w.wake:
		passOn = true
	default:
	}
	switch {
	case passOn:
		signal(head.wake)
	case wasHead:
		signal(head.promoted)
	}
}

// wakeOne wakes the first of this limiter's waiters for rkey, if any: a permit was freed.
func (l *Limiter) wakeOne(rkey string) {
	l.mu.Lock()
	if q := l.queues[rkey]; q != nil {
		q.wakes++
		if head := q.waiters.Front(); head != nil {
			signal(head.wake)
		}
	}
	l.mu.Unlock()
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// wait waits in w's queue for ls's permit: the first waiter asks Redis when woken and at
// each poll; the others wait for their turn.
func (l *Limiter) wait(ctx context.Context, w *waiter, ls *lease) (concurrency.Permit, error) {
	rkey := ls.rkey
	var poll *time.Timer
	defer func() {
		if poll != nil {
			poll.Stop()
		}
	}()
	for {
		var tick <-chan time.Time
		l.mu.Lock()
		head := l.queues[rkey].waiters.Front() == w
		l.mu.Unlock()
		if head {
			d := l.poll/2 + rand.N(l.poll)
			if poll == nil {
				poll = time.NewTimer(d)
			} else {
				poll.Reset(d)
			}
			tick = poll.C
		}
		select {
		case <-ctx.Done():
			l.leave(w, rkey, false)
			l.putLease(ls)
			return concurrency.Permit{}, fmt.Errorf("distributed: waiting for a permit: %w", ctx.Err())
		case <-l.life.Done():
			l.leave(w, rkey, false)
			l.putLease(ls)
			return concurrency.Permit{}, errClosed
		case <-w.promoted:
			continue
		case <-w.wake:
		case <-tick:
		}
		p, ok, err := l.attempt(ctx, &ls, true)
		switch {
		case ok && ls != nil: // ls is the lease granted (attempt may have replaced it)
			l.leave(w, rkey, ls.spare)
			return p, nil
		case ok || err != nil || ls == nil:
			l.leave(w, rkey, true)
			return p, err
		}
	}
}

// subscribeClient is what every go-redis client has beside redis.Scripter: pub/sub, for
// the wake-ups.
type subscribeClient interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// subscriber receives the wake-ups of the keys this limiter's callers wait for: release.lua
// publishes one on the channel named by the key each time it frees a permit. One
// connection per limiter, subscribed to the keys waited for since the last sweep.
type subscriber struct {
	l     *Limiter
	ps    *redis.PubSub
	kick  chan struct{} // channels to subscribe to
	ready chan struct{} // the first channel is wanted

	mu     sync.Mutex
	wanted map[string]bool // channel → subscribed already
}

func newSubscriber(l *Limiter, c subscribeClient) *subscriber {
	s := &subscriber{l: l, ps: c.Subscribe(l.life), kick: make(chan struct{}, 1), ready: make(chan struct{}, 1), wanted: make(map[string]bool)}
	l.wg.Go(s.subscribe)
	return s
}

// want has the subscriber listen to rkey.
func (s *subscriber) want(rkey string) {
	s.mu.Lock()
	_, ok := s.wanted[rkey]
	if !ok {
		s.wanted[rkey] = false
	}
	s.mu.Unlock()
	if !ok {
		signal(s.kick)
		signal(s.ready)
	}
}

// subscribe sends SUBSCRIBE for the channels wanted, on its own goroutine so that no
// caller ever waits for the connection.
func (s *subscriber) subscribe() {
	for {
		select {
		case <-s.l.life.Done():
			return
		case <-s.kick:
		}
		s.mu.Lock()
		var add []string
		for ch, done := range s.wanted {
			if !done {
				add = append(add, ch)
				s.wanted[ch] = true
			}
		}
		s.mu.Unlock()
		if len(add) > 0 {
			// On failure the channels are kept: go-redis subscribes to them again when it
			// reconnects. The poll covers the meantime.
			var dl deadline
			_ = s.ps.Subscribe(bounded(s.l.life, s.l.bgBound, &dl), add...)
		}
	}
}

// run receives the wake-ups until Close. A confirmed subscription wakes the key's first
// waiter too: a permit freed before it took effect would not have woken anyone.
func (s *subscriber) run() {
	l := s.l
	window := l.bgBound
	backoff := time.Duration(0)
	for l.life.Err() == nil {
		s.mu.Lock()
		idle := len(s.wanted) == 0
		s.mu.Unlock()
		if idle {
			select {
			case <-l.life.Done():
				return
			case <-s.ready:
			}
			continue
		}
		var dl deadline
		msg, err := s.ps.ReceiveTimeout(bounded(l.life, window, &dl), window)
		if err != nil {
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				backoff = 0
				continue
			}
			// Redis went away: go-redis reconnects at the next call.
			backoff = min(max(2*backoff, l.bgBound), l.poll)
			if !sleep(l.life, backoff) {
				return
			}
			continue
		}
		backoff = 0
		switch m := msg.(type) {
		case *redis.Message:
			if m.Payload != string(l.id[:]) { // this limiter's own releases woke its waiters
				l.wakeOne(m.Channel)
			}
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				l.wakeOne(m.Channel)
			}
		}
	}
}

// dropIdle forgets the queues of the keys nobody used since the last sweep, and
// unsubscribes from their wake-ups.
func (l *Limiter) dropIdle() {
	var drop []string
	l.mu.Lock()
	for rkey, q := range l.queues {
		if q.waiters.Len() == 0 && !q.touched {
			delete(l.queues, rkey)
			drop = append(drop, rkey)
		} else {
			q.touched = false
		}
	}
	l.mu.Unlock()
	if l.sub == nil {
		return
	}
	s := l.sub
	s.mu.Lock()
	unsubscribe := drop[:0]
	for _, rkey := range drop {
		if _, ok := s.wanted[rkey]; ok {
			delete(s.wanted, rkey)
			unsubscribe = append(unsubscribe, rkey)
		}
	}
	s.mu.Unlock()
	if len(unsubscribe) > 0 {
		var dl deadline
		_ = s.ps.Unsubscribe(bounded(l.life, l.bgBound, &dl), unsubscribe...)
	}
}

// close ends the subscription's connection, so that a receive in flight returns.
func (s *subscriber) close() { _ = s.ps.Close() }

// sleep waits d, or until ctx ends: it reports whether ctx lives on.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
