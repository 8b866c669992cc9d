package local

import "github.com/sluice-go/ratelimit/concurrency"

// Stats returns a snapshot of the limiter's permits. It visits every tracked key, holding
// one shard's lock at a time (1/64 of the keys), so it costs tens of nanoseconds per key
// (BenchmarkStats: under 3 ms for 100,000 keys on a small VM), and a call of the key's
// shard waits for that shard's part: a metrics scrape can afford it, a request path should
// not. The figures of different shards are read at slightly different times.
func (l *Limiter) Stats() concurrency.Stats {
	var s concurrency.Stats
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, e := range sh.keys {
			limit := l.limitOf(e, e.max)
			if s.Keys == 0 || limit < s.MinLimit {
				s.MinLimit = limit
			}
			s.MaxLimit = max(s.MaxLimit, limit)
			s.Keys++
			s.InFlight += e.held
			s.Waiting += e.waiters.Len()
		}
		// The overflow key has no limit of its own: each call brings its max.
		s.InFlight += sh.overflow.held
		s.Waiting += sh.overflow.waiters.Len()
		sh.mu.Unlock()
	}
	return s
}
