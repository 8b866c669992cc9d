package distributed

import (
	"context"
	"time"
)

// background renews the leases of the permits held every third of the TTL (a lease then
// survives two renewals lost in a row), counts the fleet's limiters, retries the releases
// Redis has not confirmed as soon as they are handed over and then with a growing delay,
// and drops the wake-up subscriptions of keys nobody waits for. It returns when Close ends
// l.life, after one last try of the releases still pending.
func (l *Limiter) background() {
	tick := time.NewTicker(l.ttl / 3)
	defer tick.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	defer retry.Stop()
	backoff := time.Duration(0)
	l.refreshMembers()
	for {
		select {
		case <-l.life.Done():
			l.releasePending(context.Background())
			return
		case <-tick.C:
			l.renewAll()
			l.refreshMembers()
			l.dropIdle()
		case <-l.kick:
		case <-retry.C:
		}
		if l.releasePending(l.life) {
			backoff = 0
			continue
		}
		// Redis did not answer: try again after a delay that doubles, from the bound of a
		// round trip up to a third of the TTL, so that a dead Redis is not hammered.
		backoff = min(max(2*backoff, l.bgBound, time.Millisecond), l.ttl/3)
		retry.Reset(backoff)
	}
}

// releasePending releases the leases pending, one script per key, and reports whether none
// is left. ctx is l.life, or, for the last try at Close, a context that has not ended.
func (l *Limiter) releasePending(ctx context.Context) bool {
	l.mu.Lock()
	leases := l.pending.take()
	l.mu.Unlock()
	if len(leases) == 0 {
		return true
	}
	byKey := make(map[string][]*lease)
	for _, ls := range leases {
		byKey[ls.rkey] = append(byKey[ls.rkey], ls)
	}
	var failed []*lease
	for rkey, set := range byKey {
		args := make([]any, 0, 7+len(set))
		args = append(args, "evalsha", releaseSHA, 1, rkey, l.ttlArg, l.shardArg, l.idArg)
		for _, ls := range set {
			args = append(args, ls.id[:])
		}
		var dl deadline
		if _, err := l.evalBounded(bounded(ctx, l.bgBound, &dl), releaseScript, args); err != nil {
			failed = append(failed, set...)
			continue
		}
		for _, ls := range set {
			l.putLease(ls)
		}
		l.wakeOne(rkey)
	}
	if len(failed) == 0 {
		return true
	}
	if l.life.Err() != nil {
		return false // Close: the leases end with their TTL
	}
	l.mu.Lock()
	for _, ls := range failed {
		l.pending.push(ls)
	}
	l.mu.Unlock()
	return false
}

// renewAll renews every held lease, one script per key (Cluster-safe: one key each). A
// lease whose last renewal was sent a TTL ago or more may have ended in Redis and been
// given to another holder: it is no longer renewed, and its holder runs on, one above max,
// until it finishes. Every other lease is renewed, and added again if Redis lost it (a
// restart, a flush). A renewal that fails is tried again at the next tick.
//
// A lease being renewed is not released at the same time: its release waits in the
// pending list, which this goroutine empties after the renewal, so that a renewal can
// never add back a lease just released.
func (l *Limiter) renewAll() {
	now := time.Now()
	byKey := make(map[string][]*lease)
	l.mu.Lock()
	for ls := l.held.head; ls != nil; {
		next := ls.next
		if now.Sub(ls.renewed) >= l.ttl {
			l.held.remove(ls) // lost: its release still goes to Redis
		} else {
			ls.renewing = true
			byKey[ls.rkey] = append(byKey[ls.rkey], ls)
		}
		ls = next
	}
	l.mu.Unlock()
	for rkey, set := range byKey {
		var lost []int64
		err := l.life.Err()
		sent := time.Now()
		if err == nil {
			args := make([]any, 0, len(set)+1)
			args = append(args, l.ttlArg)
			for _, ls := range set {
				args = append(args, ls.id[:])
			}
			var dl deadline
			lost, err = l.run(bounded(l.life, l.bgBound, &dl), renewScript, rkey, args)
		}
		l.mu.Lock()
		for _, ls := range set {
			ls.renewing = false
			if err == nil {
				ls.renewed = sent
			}
		}
		for _, i := range lost {
			if i >= 1 && int(i) <= len(set) {
				l.held.remove(set[i-1])
			}
		}
		l.mu.Unlock()
	}
}

// refreshMembers says this limiter is alive and reads how many of the prefix's are, for
// the share of max while Redis cannot answer (WithInstances).
func (l *Limiter) refreshMembers() {
	var dl deadline
	n, err := l.run(bounded(l.life, l.bgBound, &dl), membersScript, l.prefix, []any{l.ttlArg, l.idArg})
	if err == nil && len(n) == 1 && n[0] > 0 {
		l.members.Store(n[0])
	}
}
