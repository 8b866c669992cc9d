package bench

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluice-go/ratelimit"
)

// seedLimiter is the in-process limiter of the Genesis ratelimit component as our seed
// document (seeds/004, "单机模式原理") describes it. It is our reconstruction from that
// description, not Genesis's code, and it exists only to be measured against: nothing but
// this module's benchmarks uses it.
//
// The design: one x/time/rate limiter per bucket, held in a sync.Map under the formatted key
// "key:rate:burst", with the time of the bucket's last use kept beside it for an idle sweep.
// The sweep goroutine is left out; the benchmarks never run long enough to need it, and it
// is not on the decision path. seedLimiter is safe for concurrent use; its zero value is
// ready to use.
type seedLimiter struct {
	entries sync.Map // string "key:rate:burst" -> *seedEntry
}

// seedEntry is one bucket of a seedLimiter.
type seedEntry struct {
	limiter *rate.Limiter
	// lastSeen is the Unix time, in nanoseconds, of the bucket's last use. The seed only says
	// it is updated on every call; an atomic is the cheapest race-free way to do that.
	lastSeen atomic.Int64
}

// errSeedInput is what seedLimiter returns for arguments the seed says it rejects.
var errSeedInput = errors.New("seed: empty key, or rate, burst or n not positive")

// allowN takes n tokens from the bucket of (key, limit) if it holds at least n, following
// the seed's steps: check the arguments, load (or create) the bucket's limiter, ask it for n
// tokens now, and record now as the bucket's last use.
func (s *seedLimiter) allowN(key string, limit ratelimit.Limit, n int) (bool, error) {
	if key == "" || !(limit.Rate > 0) || limit.Burst < 1 || n < 1 {
		return false, errSeedInput
	}
	now := time.Now()
	name := fmt.Sprintf("%s:%v:%d", key, limit.Rate, limit.Burst)
	v, ok := s.entries.Load(name)
	if !ok {
		v, _ = s.entries.LoadOrStore(name, &seedEntry{
			limiter: rate.NewLimiter(rate.Limit(limit.Rate), limit.Burst),
		})
	}
	e := v.(*seedEntry)
	allowed := e.limiter.AllowN(now, n)
	e.lastSeen.Store(now.UnixNano())
	return allowed, nil
}

// len counts the buckets. It walks the whole map: for checking a benchmark's setup only.
func (s *seedLimiter) len() int {
	n := 0
	s.entries.Range(func(any, any) bool {
		n++
		return true
	})
	return n
}
