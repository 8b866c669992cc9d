package distributed

import "time"

// renewLoop renews the leases of the permits held, every third of the TTL, until Close:
// a lease then survives two renewals lost in a row.
func (l *Limiter) renewLoop() {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.life.Done():
			return
		case <-t.C:
			l.renewAll()
		}
	}
}

// renewAll renews every held lease, one script per key (Cluster-safe: one key each). A
// lease Redis reports lost (it ended before the renewal came) is no longer renewed: its
// holder keeps running, one more than max until it finishes. A renewal that fails is tried
// again at the next tick.
func (l *Limiter) renewAll() {
	l.mu.Lock()
	batches := make(map[string][]*lease, len(l.leases))
	for key, set := range l.leases {
		for ls := range set {
			batches[key] = append(batches[key], ls)
		}
	}
	l.mu.Unlock()
	for key, leases := range batches {
		if l.life.Err() != nil {
			return
		}
		args := make([]any, 0, len(leases)+1)
		args = append(args, l.ttl.Microseconds())
		byID := make(map[string]*lease, len(leases))
		for _, ls := range leases {
			args = append(args, ls.id)
			byID[ls.id] = ls
		}
		ctx, cancel := l.bound(l.life)
		lost, err := renewScript.Run(ctx, l.client, []string{key}, args...).StringSlice()
		cancel()
		if err != nil {
			continue
		}
		for _, id := range lost {
			if ls := byID[id]; ls != nil {
				l.forget(ls)
			}
		}
	}
}
