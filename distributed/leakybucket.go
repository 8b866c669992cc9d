package distributed

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
)

//go:embed leakybucket.lua
var leakyBucketSource string

// waitInQueue is Wait for ratelimit.LeakyBucket: see Wait.
func (l *Limiter) waitInQueue(ctx context.Context, key string, limit ratelimit.Limit) error {
	alg := algorithms[ratelimit.LeakyBucket]
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := l.check(key, limit, 1); err != nil {
			return err
		}
		argv := []any{limit.Rate, limit.Burst, 1, l.testNow()}
		deadline, bounded := ctx.Deadline()
		if bounded {
			// ARGV[5]: the longest delay the caller's deadline leaves room for.
			argv = append(argv, max(time.Until(deadline), 0).Microseconds())
		}
		r, err := l.run(ctx, alg.script, l.key(key, alg.tag, limit), argv)
		if err != nil {
			return invalidState(err)
		}
		res := resultOf(r, limit)
		switch {
		case res.Allowed:
			return hold(ctx, res.Delay)
		case res.RetryAfter == 0:
			return fmt.Errorf("ratelimit: the queue would hold the request %v, past the context deadline: %w",
				res.Delay, context.DeadlineExceeded)
		case bounded && time.Until(deadline) < res.ResetAfter:
			// The queue is full. A place frees up after RetryAfter, and its turn comes when
			// the queue has drained: ResetAfter from now at the earliest.
			return fmt.Errorf("ratelimit: the queue is full and drains in %v, past the context deadline: %w",
				res.ResetAfter, context.DeadlineExceeded)
		}
		if err := hold(ctx, res.RetryAfter); err != nil {
			return err
		}
	}
}

// hold sleeps d, or until ctx ends. A ctx that ends at the very moment d is up does not
// count: the time was served.
func hold(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	wake := time.Now().Add(d)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		if !time.Now().Before(wake) {
			return nil
		}
		return ctx.Err()
	}
}
