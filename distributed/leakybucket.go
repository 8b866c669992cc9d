package distributed

import (
	"context"
	_ "embed"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/wait"
)

//go:embed leakybucket.lua
var leakyBucketFile string

var leakyBucketSource = expand(leakyBucketFile)

// waitInQueue is Wait for ratelimit.LeakyBucket, the algorithm of limit or the limiter's
// default: see Wait.
func (l *Limiter) waitInQueue(ctx context.Context, key string, limit ratelimit.Limit) error {
	alg := algorithms[ratelimit.LeakyBucket]
	return wait.Queue(ctx, func(ctx context.Context, maxDelay time.Duration, bounded bool) (ratelimit.Result, error) {
		if err := l.check(key, limit, 1); err != nil {
			return ratelimit.Result{Limit: limit}, err
		}
		reserve, err := l.reserve(ctx, limit, 1)
		if err != nil {
			return ratelimit.Result{Limit: limit}, err
		}
		var bound any
		if bounded {
			// ARGV[4]: the longest delay the caller's deadline leaves room for.
			bound = maxDelay.Microseconds()
		}
		req := l.request(alg, key, limit, 1, bound, reserve)
		r, err := l.run(ctx, alg.scripts.on(l.now != nil), req.keys[:], req.argv, req)
		if err != nil {
			return ratelimit.Result{Limit: limit}, invalidState(err)
		}
		return resultOf(r, limit), nil
	}, l.stop)
}
