package fallback

import (
	"hash/maphash"
	"math"
	"strings"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// listDenial is what the primary answered when it denied a list of requests at once
// (AllowAll): the list, the Results, and the stamps of its requests' entries then (the
// binding request's a denial, the others' a denial or a watch), so that the same list is
// denied again without asking the primary while none of its buckets has changed through the
// Limiter (see the stamp of denial).
type listDenial struct {
	reqs     []ratelimit.Request // keys cloned, names dropped, N of 0 made 1
	results  []ratelimit.Result
	stamps   []uint64 // 0 for a request skipped for its zero Limit
	binding  int
	priority priority.Level
	sent     int64
	// expires is the binding denial's, or sooner: when another denied request's RetryAfter
	// or an admitted one's ResetAfter ends (a window rolls over, a bucket is full), after
	// which its aged Result would no longer be the primary's.
	expires int64
}

// matches reports whether reqs at priority p is the list d was made for, request by request.
func (d *listDenial) matches(reqs []ratelimit.Request, p priority.Level) bool {
	if len(reqs) != len(d.reqs) || p != d.priority {
		return false
	}
	for i := range reqs {
		q, m := &reqs[i], &d.reqs[i]
		if q.Key != m.Key || q.Limit != m.Limit || listCost(q.N) != m.N {
			return false
		}
	}
	return true
}

// listCost is the cost of a Request of N n: 1 for 0; any other n, even one AllowAll
// refuses, as it is.
func listCost(n int) int {
	if n == 0 {
		return 1
	}
	return n
}

// aged returns the primary's answer to the list, aged by the time since it was sent, as
// lookup ages one denial: RetryAfter and ResetAfter shrink, the rest is the primary's.
func (d *listDenial) aged(now int64) ratelimit.MultiResult {
	elapsed := time.Duration(now - d.sent)
	results := make([]ratelimit.Result, len(d.results))
	for i, r := range d.results {
		r.ResetAfter = max(r.ResetAfter-elapsed, 0)
		if !r.Allowed {
			r.RetryAfter -= elapsed
			r.ResetAfter = max(r.ResetAfter, r.RetryAfter)
		}
		results[i] = r
	}
	return ratelimit.MultiResult{Results: results, Binding: d.binding}
}

// listHash is the hash of the keys of reqs and of priority p, which picks the shard of
// their list and its place in the shard's lists.
func (c *denialCache) listHash(reqs []ratelimit.Request, p priority.Level) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteByte(byte(p))
	for i := range reqs {
		h.WriteString(reqs[i].Key)
		h.WriteByte(0) // keys "ab", "c" and "a", "bc" are other lists
	}
	return h.Sum64()
}

// lookupAll returns the primary's answer to reqs at priority p, aged to now, if the primary
// denied that very list and no bucket of it has changed through the Limiter since. Otherwise
// it returns the generation to hand to storeAll with the primary's answer.
func (c *denialCache) lookupAll(reqs []ratelimit.Request, p priority.Level, now int64) (ratelimit.MultiResult, uint64, bool) {
	gen := c.gen.Load()
	h := c.listHash(reqs, p)
	s := &c.shards[h%cacheShards]
	s.mu.RLock()
	d := s.lists[h]
	s.mu.RUnlock()
	if d == nil || now >= d.expires || !d.matches(reqs, p) || !c.unchanged(d) {
		return ratelimit.MultiResult{}, gen, false
	}
	return d.aged(now), gen, true
}

// unchanged reports whether the entries of d's requests still have the stamps they had when
// d was stored.
func (c *denialCache) unchanged(d *listDenial) bool {
	for j := range d.reqs {
		if d.stamps[j] == 0 {
			continue
		}
		q := &d.reqs[j]
		if e, ok := c.entry(q.Key, q.Limit); !ok || e.stamp != d.stamps[j] {
			return false
		}
	}
	return true
}

// storeAll remembers that the primary, asked at sent, denied reqs at priority p with mr:
// each denied request of one token as store remembers it; and, when the binding request is
// of one token and every denial lasts, the list (listDenial), watching the buckets of the
// other requests. gen is what lookupAll returned before the list was sent: once a reset or
// a refund has come since, nothing more is stored.
func (c *denialCache) storeAll(reqs []ratelimit.Request, p priority.Level, sent int64, gen uint64, mr ratelimit.MultiResult) {
	if mr.Allowed || len(mr.Results) != len(reqs) || mr.Binding < 0 || mr.Binding >= len(reqs) {
		return
	}
	list := c.listOf(reqs, p, sent, mr)
	for i, r := range mr.Results {
		q := &reqs[i]
		denied := !r.Allowed && r.RetryAfter > 0 && listCost(q.N) == 1
		if q.Limit == (ratelimit.Limit{}) || (!denied && list == nil) {
			continue
		}
		s := c.shard(q.Key)
		s.mu.Lock()
		if c.gen.Load() != gen {
			s.mu.Unlock()
			return
		}
		var stamp uint64
		if denied {
			stamp = s.put(c, q.Key, q.Limit, c.denialOf(q.Limit, p, sent, r))
		} else {
			stamp = s.watch(c, q.Key, q.Limit, sent)
		}
		s.mu.Unlock()
		if list != nil {
			list.stamps[i] = stamp
		}
	}
	if list == nil || list.stamps[mr.Binding] == 0 {
		return
	}
	h := c.listHash(reqs, p)
	s := &c.shards[h%cacheShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.gen.Load() != gen {
		return
	}
	if _, ok := s.lists[h]; !ok && len(s.lists) >= c.perShard {
		s.evictList(sent)
	}
	s.lists[h] = list
}

// listOf returns the list to remember of the primary's denial mr of reqs at priority p,
// asked at sent, its stamps not yet set; or nil when there is none to remember: the binding
// request is of more than one token, or a denial does not last.
func (c *denialCache) listOf(reqs []ratelimit.Request, p priority.Level, sent int64, mr ratelimit.MultiResult) *listDenial {
	if listCost(reqs[mr.Binding].N) != 1 {
		return nil
	}
	lasts := c.ttl // how long the list is remembered, from sent
	for _, r := range mr.Results {
		switch {
		case !r.Allowed && r.RetryAfter <= 0:
			return nil
		case !r.Allowed:
			lasts = min(lasts, int64(r.RetryAfter))
		case r.ResetAfter > 0:
			lasts = min(lasts, int64(r.ResetAfter))
		}
	}
	list := &listDenial{binding: mr.Binding, priority: p, sent: sent, expires: sent + lasts}
	list.reqs = make([]ratelimit.Request, len(reqs))
	for i, q := range reqs {
		list.reqs[i] = ratelimit.Request{Key: strings.Clone(q.Key), Limit: q.Limit, N: listCost(q.N)}
	}
	list.results = append([]ratelimit.Result(nil), mr.Results...)
	list.stamps = make([]uint64, len(reqs))
	return list
}

// evictList makes room for a list in a full shard, as evict does for an entry.
func (s *cacheShard) evictList(now int64) {
	var victim uint64
	soonest, seen, dropped := int64(math.MaxInt64), 0, false
	for h, d := range s.lists {
		if d.expires <= now {
			delete(s.lists, h)
			dropped = true
		} else if d.expires < soonest {
			victim, soonest = h, d.expires
		}
		if seen++; seen == evictSample {
			break
		}
	}
	if !dropped {
		delete(s.lists, victim)
	}
}
