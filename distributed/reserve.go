package distributed

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/internal/wait"
)

var _ ratelimit.Reserver = (*Limiter)(nil)

//go:embed reserve.lua
var reserveFile string

// reserveScript books a slot ahead on a bucket of a theoretical arrival time (reserve.lua).
var reserveScript = newScriptPair(expand(reserveFile))

// Reserve books n tokens for a slot within maxWait, as ratelimit.Reserver says, in one
// script on the Redis clock, so that callers in every process share one timeline: n tokens
// of a token bucket conform when its TAT less Burst has caught up (the Delay), and a leaky
// bucket's place comes at its turn in the outflow; either is booked only if the bucket is
// then at most Burst tokens in debt (the server's ceiling, Settle's bound). Under a Redis
// Cluster the bucket's one key is its slot's, as for AllowN. Other algorithms, and a token
// bucket with a Warmup or a limit with KeepUsage, answer ratelimit.ErrNotSupported.
// A negative maxWait is 0.
func (l *Limiter) Reserve(ctx context.Context, key string, limit ratelimit.Limit, n int, maxWait time.Duration) (ratelimit.Result, error) {
	res, _, err := l.book(ctx, key, limit, n, maxWait)
	return res, err
}

// book is Reserve, also reporting whether a refusal was the ceiling's rather than maxWait's.
func (l *Limiter) book(ctx context.Context, key string, limit ratelimit.Limit, n int, maxWait time.Duration) (ratelimit.Result, bool, error) {
	if err := l.check(key, limit, n); err != nil {
		return ratelimit.Result{Limit: limit}, false, err
	}
	named := args.Resolve(limit, l.algorithm)
	if !(named.Algorithm == ratelimit.TokenBucket || named.Algorithm == ratelimit.LeakyBucket) || limit.Warmup != 0 || limit.KeepUsage {
		return ratelimit.Result{Limit: limit}, false, fmt.Errorf("%w: distributed: Reserve on %v (a token or leaky bucket without a warm-up or KeepUsage books ahead)",
			ratelimit.ErrNotSupported, named.Algorithm)
	}
	reserve, err := l.reserve(ctx, limit, n)
	if err != nil {
		return ratelimit.Result{Limit: limit}, false, err
	}
	alg := l.algorithmFor(limit)
	argv := []any{alg.tag, limit.Rate, limit.Burst, n, max(maxWait, 0).Microseconds(), reserve}
	if l.now != nil {
		argv = append(argv, l.clientNow(), l.skew)
	}
	vals, err := l.run(ctx, reserveScript.on(l.now != nil), []string{l.key(key, alg.tag, limit)}, argv, nil)
	if err != nil {
		return ratelimit.Result{Limit: limit}, false, invalidState(err)
	}
	if len(vals) != 6 {
		return ratelimit.Result{Limit: limit}, false, fmt.Errorf("distributed: the reserve script returned %d values, want 6", len(vals))
	}
	res := ratelimit.Result{
		Allowed:    vals[0] == 1,
		Limit:      limit,
		Remaining:  int(min(max(vals[1], 0), int64(limit.Burst))),
		ResetAfter: time.Duration(vals[3]) * time.Microsecond,
	}
	if res.Allowed {
		res.Delay = time.Duration(vals[2]) * time.Microsecond
		res.Charge.At = instant(vals[5])
	} else {
		res.RetryAfter = max(time.Duration(vals[2])*time.Microsecond, time.Microsecond)
	}
	return res, vals[4] == 1, nil
}

// waitBooked is Wait on a token bucket: one Reserve for a slot before ctx's deadline (or
// within the ceiling, without one), then a sleep until it. A slot beyond the ceiling is
// waited for until it is within it, and booked then; one past the deadline fails at once.
func (l *Limiter) waitBooked(ctx context.Context, key string, limit ratelimit.Limit) error {
	return wait.Queue(ctx, func(ctx context.Context, maxDelay time.Duration, bounded bool) (ratelimit.Result, error) {
		if !bounded {
			maxDelay = maxUS * time.Microsecond
		}
		res, ceiling, err := l.book(ctx, key, limit, 1, maxDelay)
		switch {
		case err != nil || res.Allowed:
		case !ceiling:
			res.RetryAfter = 0 // past the deadline: wait.Queue fails at once
		default:
			// Past the ceiling: hold until the bucket is within it, then book again; the
			// slot itself comes RetryAfter from now at the earliest.
			res.ResetAfter = res.RetryAfter
			res.RetryAfter = max(res.RetryAfter-ceilingOf(limit), time.Microsecond)
		}
		return res, err
	}, l.stop)
}

// ceilingOf is the longest a slot may be booked ahead under limit: Burst tokens at Rate.
func ceilingOf(limit ratelimit.Limit) time.Duration {
	return time.Duration(float64(limit.Burst)/limit.Rate*1e6) * time.Microsecond
}

// maxUS is the longest duration the scripts count, in µs: 2^53.
const maxUS = 1 << 53
