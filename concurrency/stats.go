package concurrency

// Stats is a snapshot of a limiter's permits, for metrics. It names no key, and gives no
// figure per key: keys may carry personal data, and there may be millions of them.
type Stats struct {
	// Keys is the number of keys tracked, idle ones included (WithMaxKeys caps it).
	Keys int
	// InFlight is the number of permits granted and not yet released.
	InFlight int
	// Waiting is the number of callers waiting for a permit.
	Waiting int
	// MinLimit and MaxLimit are the lowest and the highest limit in force among the keys
	// tracked (see Local.Limit): with WithAdaptive, how far the adaptive limits have
	// moved; without it, the range of the calls' max. Both are 0 when no key is tracked.
	MinLimit, MaxLimit int
}

// StatsReporter is a limiter that reports a snapshot of its permits, as Local does. The
// observers of packages otelmetrics and prommetrics turn it into gauges, under a policy
// name of the user's choosing.
type StatsReporter interface {
	Stats() Stats
}

var _ StatsReporter = (*Local)(nil)

// Stats returns a snapshot of the limiter's permits. It visits every tracked key, holding
// one shard's lock at a time (1/64 of the keys), so it costs tens of nanoseconds per key
// (BenchmarkStats: under 3 ms for 100,000 keys on a small VM), and a call of the key's
// shard waits for that shard's part: a metrics scrape can afford it, a request path should
// not. The figures of different shards are read at slightly different times.
func (l *Local) Stats() Stats {
	var s Stats
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
			s.Waiting += e.waiters.n
		}
		// The overflow key has no limit of its own: each call brings its max.
		s.InFlight += sh.overflow.held
		s.Waiting += sh.overflow.waiters.n
		sh.mu.Unlock()
	}
	return s
}
