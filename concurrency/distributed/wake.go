package distributed

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
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

// isRing reports whether client is a go-redis Ring, whose Subscribe needs its channels at
// once, to pick the shard: its waiters poll.
func isRing(client redis.Scripter) bool {
	_, ok := client.(*redis.Ring)
	return ok
}

// maxSlotSets caps the connections a limiter subscribes with on a Cluster: one per hash
// slot waited for. The waiters of a key of another slot poll.
const maxSlotSets = 32

// subscriber receives the wake-ups of the keys this limiter's callers wait for: release.lua
// publishes one on the channel named by the key each time it frees a permit. On one node,
// one connection subscribes to the keys waited for since the last sweep; on a Cluster, one
// connection per hash slot waited for (at most maxSlotSets) subscribes to its keys' shard
// channels on the node that holds the slot.
type subscriber struct {
	l       *Limiter
	node    subscribeClient      // a client of one node (or Sentinel's): the set at slot 0
	cluster *redis.ClusterClient // nil on one node

	mu     sync.Mutex
	sets   map[int]*channelSet // by hash slot (0 on one node)
	closed bool
}

// channelSet is one subscription connection and the channels it is wanted for.
type channelSet struct {
	s     *subscriber
	ps    *redis.PubSub
	shard bool            // SSUBSCRIBE, not SUBSCRIBE
	life  context.Context // ended by Close, or when the set is dropped
	stop  context.CancelFunc
	kick  chan struct{} // channels to subscribe to
	ready chan struct{} // channels were sent

	wanted map[string]bool // channel → subscribed already; guarded by s.mu
	sent   bool            // a channel was sent: run may receive; guarded by s.mu
}

func newSubscriber(l *Limiter, node subscribeClient, cluster *redis.ClusterClient) *subscriber {
	s := &subscriber{l: l, node: node, cluster: cluster, sets: make(map[int]*channelSet)}
	if cluster == nil {
		s.mu.Lock()
		s.newSet(0)
		s.mu.Unlock()
	}
	return s
}

// newSet starts the subscription of slot, s.mu held. Neither go-redis's Subscribe nor its
// SSubscribe connects before the first channel.
func (s *subscriber) newSet(slot int) *channelSet {
	set := &channelSet{s: s, kick: make(chan struct{}, 1), ready: make(chan struct{}, 1), wanted: make(map[string]bool)}
	set.life, set.stop = context.WithCancel(s.l.life)
	if s.cluster != nil {
		set.ps, set.shard = s.cluster.SSubscribe(set.life), true
	} else {
		set.ps = s.node.Subscribe(set.life)
	}
	s.sets[slot] = set
	s.l.wg.Go(set.subscribe)
	s.l.wg.Go(set.run)
	return set
}

// slot returns the set rkey's channel belongs to: its hash slot on a Cluster.
func (s *subscriber) slot(rkey string) int {
	if s.cluster == nil {
		return 0
	}
	return hashSlot(rkey)
}

// want has the subscriber listen to rkey, unless Close has begun (no goroutine starts
// then) or rkey's slot would be one too many.
func (s *subscriber) want(rkey string) {
	s.mu.Lock()
	slot := s.slot(rkey)
	set := s.sets[slot]
	if set == nil && !s.closed && len(s.sets) < maxSlotSets {
		set = s.newSet(slot)
	}
	var added bool
	if set != nil {
		if _, ok := set.wanted[rkey]; !ok {
			set.wanted[rkey], added = false, true
		}
	}
	s.mu.Unlock()
	if added {
		signal(set.kick)
	}
}

// subscribe sends SUBSCRIBE (SSUBSCRIBE) for the channels wanted, on its own goroutine so
// that no caller ever waits for the connection.
func (set *channelSet) subscribe() {
	s := set.s
	for {
		select {
		case <-set.life.Done():
			return
		case <-set.kick:
		}
		s.mu.Lock()
		var add []string
		for ch, done := range set.wanted {
			if !done {
				add = append(add, ch)
				set.wanted[ch] = true
			}
		}
		set.sent = set.sent || len(add) > 0
		s.mu.Unlock()
		if len(add) == 0 {
			continue
		}
		// On failure the channels are kept: go-redis subscribes to them again when it
		// reconnects. The poll covers the meantime.
		var dl deadline
		ctx := bounded(set.life, s.l.bgBound, &dl)
		if set.shard {
			_ = set.ps.SSubscribe(ctx, add...)
		} else {
			_ = set.ps.Subscribe(ctx, add...)
		}
		signal(set.ready)
	}
}

// run receives the set's wake-ups until Close, or until the set is dropped, once a first
// channel was sent: a receive before it would connect, and on a Cluster to a node chosen at
// random, not the one holding the slot. A confirmed subscription wakes the key's first
// waiter too: a permit freed before it took effect would not have woken anyone.
func (set *channelSet) run() {
	s, l := set.s, set.s.l
	window := l.bgBound
	backoff := time.Duration(0)
	for set.life.Err() == nil {
		s.mu.Lock()
		idle := !set.sent || len(set.wanted) == 0
		s.mu.Unlock()
		if idle {
			select {
			case <-set.life.Done():
				return
			case <-set.ready:
			}
			continue
		}
		var dl deadline
		msg, err := set.ps.ReceiveTimeout(bounded(set.life, window, &dl), window)
		if err != nil {
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				backoff = 0
				continue
			}
			// Redis went away: go-redis reconnects at the next call.
			backoff = min(max(2*backoff, l.bgBound), l.poll)
			if !sleep(set.life, backoff) {
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
			switch m.Kind {
			case "subscribe", "ssubscribe":
				l.wakeOne(m.Channel)
			case "sunsubscribe":
				// A shard channel still wanted, unsubscribed by the server: its slot moved
				// to another node. The set goes (its waiters poll), and the next caller to
				// wait for one of its keys subscribes again, on the slot's new node.
				s.mu.Lock()
				_, still := set.wanted[m.Channel]
				s.mu.Unlock()
				if still {
					s.drop(set)
					return
				}
			}
		}
	}
}

// drop ends set and forgets it, if it is still the subscriber's.
func (s *subscriber) drop(set *channelSet) {
	s.mu.Lock()
	for slot, x := range s.sets {
		if x == set {
			delete(s.sets, slot)
		}
	}
	s.mu.Unlock()
	set.stop()
	_ = set.ps.Close()
}

// dropIdle forgets the queues of the keys nobody used since the last sweep, and
// unsubscribes from their wake-ups: on a Cluster, a slot's connection goes with its last
// channel.
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
	if l.sub == nil || len(drop) == 0 {
		return
	}
	s := l.sub
	unsubscribe := make(map[*channelSet][]string)
	var empty []*channelSet
	s.mu.Lock()
	for _, rkey := range drop {
		set := s.sets[s.slot(rkey)]
		if set == nil {
			continue
		}
		if _, ok := set.wanted[rkey]; ok {
			delete(set.wanted, rkey)
			unsubscribe[set] = append(unsubscribe[set], rkey)
		}
	}
	for set := range unsubscribe {
		if set.shard && len(set.wanted) == 0 {
			delete(unsubscribe, set)
			empty = append(empty, set)
		}
	}
	s.mu.Unlock()
	for _, set := range empty {
		s.drop(set)
	}
	for set, channels := range unsubscribe {
		var dl deadline
		ctx := bounded(l.life, l.bgBound, &dl)
		if set.shard {
			_ = set.ps.SUnsubscribe(ctx, channels...)
		} else {
			_ = set.ps.Unsubscribe(ctx, channels...)
		}
	}
}

// close ends the subscriptions' connections, so that a receive in flight returns, and
// keeps any from starting.
func (s *subscriber) close() {
	s.mu.Lock()
	s.closed = true
	sets := make([]*channelSet, 0, len(s.sets))
	for _, set := range s.sets {
		sets = append(sets, set)
	}
	s.mu.Unlock()
	for _, set := range sets {
		set.stop()
		_ = set.ps.Close()
	}
}

// hashSlot returns the Redis Cluster hash slot of key: CRC-16/XMODEM of its hash tag (what
// lies between the first "{" and the next "}", when not empty) or of the whole key, modulo
// 16384.
func hashSlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	crc := uint16(0)
	for _, b := range []byte(key) {
		crc ^= uint16(b) << 8
		for bit := 0; bit < 8; bit++ {
			carry := crc & 0x8000
			crc <<= 1
			if carry != 0 {
				crc ^= 0x1021
			}
		}
	}
	return int(crc & 16383)
}

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
