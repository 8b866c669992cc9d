package fallback

import (
	"hash/maphash"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/priority"
)

// cacheShards is the number of independently locked parts of the denial cache.
const cacheShards = 64

// evictSample is how many entries a full shard looks at to make room for a new one.
const evictSample = 8

// bucket names a bucket as every backend does: the key and the limit, algorithm included.
// A limit that names no algorithm is another entry than the same limit naming the primary's
// default, though the primary holds one bucket for both: the cache cannot know the default,
// so a denial proves nothing for the other, and invalidate drops both.
//
// A limit with KeepUsage is one bucket whatever its numbers (see ratelimit.Limit.KeepUsage),
// so it has one entry whatever its numbers too, its key, algorithm and (for a fixed window
// or a sliding counter) window: an admission, a reset or a refund under any numbers drops
// it, and its denial answers only a request under the numbers it was made under (denial's
// limit).
type bucket struct {
	key    string
	rate   float64 // with KeepUsage: a window algorithm's window in µs, or 0
	burst  int
	warmup time.Duration
	alg    ratelimit.Algorithm
	period ratelimit.Period
	keep   bool
}

// bucketOf is the entry of (key, limit).
func bucketOf(key string, limit ratelimit.Limit) bucket {
	if limit.KeepUsage {
		return keepBucketOf(key, limit)
	}
	return bucket{key, limit.Rate, limit.Burst, limit.Warmup, limit.Algorithm, limit.Period, false}
}

func keepBucketOf(key string, limit ratelimit.Limit) bucket {
	b := bucket{key: key, alg: limit.Algorithm, period: limit.Period, keep: true}
	if limit.Algorithm == ratelimit.FixedWindow || limit.Algorithm == ratelimit.SlidingWindowCounter {
		w, _ := args.Window(limit)
		b.rate = float64(w)
	}
	return b
}

// denial is what the primary last said when it denied a request on a bucket.
type denial struct {
	sent  int64         // when the request was sent to the primary, ns since the epoch
	until int64         // sent + RetryAfter: until then, a request of the same cost is denied
	cost  int           // the denied request's cost
	reset time.Duration // the denial's ResetAfter
	// expires is when the cache stops answering for the primary: until, or sooner under the
	// cache's TTL (WithDenialCacheTTL), which bounds how long a reset made elsewhere goes
	// unseen here.
	expires int64
	// priority is the denied request's: a denial proves nothing about a request of another
	// priority, which keeps another reserve (priority.Reserves) and so has another
	// RetryAfter, or none.
	priority priority.Level
	// limit is the denied request's, for an entry of a limit with KeepUsage: a denial
	// proves nothing about the bucket under other numbers.
	limit ratelimit.Limit
	// stamp names the state of the bucket the entry was made for: a denial that replaces
	// the entry keeps it (a denial changes no bucket); an admission, a reset or a refund
	// through the Limiter drops the entry, and with it the stamp. An entry that is no
	// denial (expires 0) only watches a bucket of a list (see listDenial).
	stamp uint64
}

// denialCache remembers the primary's denials, so that a request the primary is known to
// deny is denied without asking it. See the package documentation for why that never
// admits or denies anything the primary would not.
type denialCache struct {
	seed     maphash.Seed
	perShard int
	ttl      int64 // ns; math.MaxInt64: none
	// gen counts the resets and refunds made through the Limiter on any key, for a list
	// (storeAll), whose buckets are in several shards.
	gen    atomic.Uint64
	stamps atomic.Uint64 // the last stamp given to an entry
	shards [cacheShards]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[bucket]denial
	// lists holds the primary's denials of lists of requests, by the hash of their keys
	// (listDenial).
	lists map[uint64]*listDenial
	// gen counts the resets and refunds made through the Limiter on the shard's keys. A
	// denial is stored only if no reset or refund of the shard came between the lookup that
	// preceded its request and its answer: the primary may have decided it before them.
	gen uint64
	_   [64 - 48]byte // keep shards on separate cache lines
}

func newDenialCache(size int, ttl time.Duration) *denialCache {
	c := &denialCache{seed: maphash.MakeSeed(), perShard: max(1, size/cacheShards), ttl: int64(ttl)}
	for i := range c.shards {
		c.shards[i].m = make(map[bucket]denial)
		c.shards[i].lists = make(map[uint64]*listDenial)
	}
	return c
}

func (c *denialCache) shard(key string) *cacheShard {
	return &c.shards[maphash.String(c.seed, key)%cacheShards]
}

// lookup returns the denial of a request of n tokens at priority p on (key, limit) at now,
// if a denial by the primary proves it, without allocating. Otherwise it returns the
// generation to hand to store with the primary's answer.
func (c *denialCache) lookup(key string, limit ratelimit.Limit, n int, p priority.Level, now int64) (ratelimit.Result, uint64, bool) {
	s := c.shard(key)
	s.mu.RLock()
	d, ok := s.m[bucketOf(key, limit)]
	gen := s.gen
	s.mu.RUnlock()
	if !ok || n != d.cost || p != d.priority || now >= d.expires || (limit.KeepUsage && limit != d.limit) {
		return ratelimit.Result{}, gen, false
	}
	// The primary's answer, aged by the time since it was asked, as it would be if nothing
	// else had used the bucket since: the same request is allowed at until, and the bucket
	// is full at sent + reset. Remaining is 0, as in every denial of one token by every
	// algorithm.
	retry := time.Duration(d.until - now)
	reset := max(d.reset-time.Duration(now-d.sent), retry)
	return ratelimit.Result{Limit: limit, RetryAfter: retry, ResetAfter: reset}, 0, true
}

// store remembers that the primary, asked at sent, denied n tokens at priority p on
// (key, limit) with res, in place of what the cache held for the bucket, unless that was a
// denial of the same cost and priority lasting at least as long (the answer to a request sent
// earlier can come back later). gen is what lookup returned before the request was sent: if
// a reset or a refund came since, the denial may predate it and is dropped.
//
// Only denials of one token are kept. A denial of n > 1 tokens proves as much, but what the
// bucket's Remaining becomes while it lasts depends on the algorithm (a token bucket refills
// by fractions, a sliding log by whole entries, a fixed window not at all), which only the
// primary knows; and requests of one token are the hot path.
func (c *denialCache) store(key string, limit ratelimit.Limit, n int, p priority.Level, sent int64, gen uint64, res ratelimit.Result) {
	if res.RetryAfter <= 0 || n != 1 {
		return
	}
	d := c.denialOf(limit, p, sent, res)
	s := c.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return
	}
	s.put(c, key, limit, d)
}

// denialOf is the entry of a denial of one token at priority p on limit, asked at sent.
func (c *denialCache) denialOf(limit ratelimit.Limit, p priority.Level, sent int64, res ratelimit.Result) denial {
	until := sent + int64(res.RetryAfter)
	d := denial{sent: sent, until: until, expires: sent + min(int64(res.RetryAfter), c.ttl), cost: 1, reset: res.ResetAfter, priority: p}
	if limit.KeepUsage {
		d.limit = limit
	}
	return d
}

// put stores d as the entry of (key, limit), in place of what the shard held, unless that
// was a denial of the same cost and priority lasting at least as long, which is kept. The
// entry keeps the stamp of the one it replaces, or gets a new one. It returns the entry's
// stamp. It is called with s.mu held.
func (s *cacheShard) put(c *denialCache, key string, limit ratelimit.Limit, d denial) uint64 {
	k := bucketOf(key, limit)
	old, ok := s.m[k]
	if ok && old.cost == d.cost && old.priority == d.priority && old.limit == d.limit && old.until >= d.until && old.expires >= d.expires {
		return old.stamp
	}
	if ok {
		d.stamp = old.stamp
	} else {
		d.stamp = c.stamps.Add(1)
		if len(s.m) >= c.perShard {
			s.evict(d.sent)
		}
	}
	// A copy of the key: the caller's may share memory with a larger buffer.
	k.key = strings.Clone(key)
	s.m[k] = d
	return d.stamp
}

// watch returns the stamp of the entry of (key, limit), first made, if there is none, as an
// entry that denies nothing. It is called with s.mu held.
func (s *cacheShard) watch(c *denialCache, key string, limit ratelimit.Limit, now int64) uint64 {
	k := bucketOf(key, limit)
	if d, ok := s.m[k]; ok {
		return d.stamp
	}
	if len(s.m) >= c.perShard {
		s.evict(now)
	}
	d := denial{stamp: c.stamps.Add(1)}
	if limit.KeepUsage {
		d.limit = limit
	}
	k.key = strings.Clone(key)
	s.m[k] = d
	return d.stamp
}

// entry returns the entry of (key, limit), if any.
func (c *denialCache) entry(key string, limit ratelimit.Limit) (denial, bool) {
	s := c.shard(key)
	s.mu.RLock()
	d, ok := s.m[bucketOf(key, limit)]
	s.mu.RUnlock()
	return d, ok
}

// forget drops what the cache holds for (key, limit): the primary has just admitted a
// request there, so the bucket is no longer as the denial left it.
func (c *denialCache) forget(key string, limit ratelimit.Limit) {
	k := bucketOf(key, limit)
	s := c.shard(key)
	s.mu.RLock()
	_, ok := s.m[k]
	s.mu.RUnlock()
	if ok {
		s.mu.Lock()
		delete(s.m, k)
		s.mu.Unlock()
	}
}

// invalidate forgets what the cache holds for (key, limit), and drops the denials of every
// request on the shard now waiting for the primary's answer: a reset or a refund of the
// bucket has just been made, and those denials may have been decided before it. The
// primary's bucket may be cached under another entry too, the same limit naming its
// default algorithm or none (see bucket): invalidate drops the limit under every algorithm,
// which can only send more requests to the primary.
func (c *denialCache) invalidate(key string, limit ratelimit.Limit) {
	s := c.shard(key)
	s.mu.Lock()
	s.gen++
	c.gen.Add(1)
	for a := ratelimit.DefaultAlgorithm; a <= ratelimit.CalendarQuota; a++ {
		limit.Algorithm = a
		delete(s.m, bucketOf(key, limit))
	}
	s.mu.Unlock()
}

// evict makes room in a full shard: it looks at a few entries (Go starts each map
// iteration at a random place), drops those that have expired, and if none had, drops the
// one of them that expires first.
func (s *cacheShard) evict(now int64) {
	var victim bucket
	soonest, seen, dropped := int64(math.MaxInt64), 0, false
	for k, d := range s.m {
		if d.expires <= now {
			delete(s.m, k)
			dropped = true
		} else if d.expires < soonest {
			victim, soonest = k, d.expires
		}
		if seen++; seen == evictSample {
			break
		}
	}
	if !dropped {
		delete(s.m, victim)
	}
}

// len returns the number of denials held, expired or not.
func (c *denialCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}
