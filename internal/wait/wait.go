// Package wait holds the two ways a request waits for its turn, written once for every
// backend and middleware: Hold, which serves the delay a shaper (ratelimit.LeakyBucket)
// gave an admitted request, and Queue, the loop of a shaper's Wait.
package wait

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
)

// Hold sleeps d, or until ctx ends or stop is closed (a nil stop never is), and then returns
// ctx's error or ratelimit.ErrClosed. A ctx that ends at the very moment d is up does not
// count: the time was served.
func Hold(ctx context.Context, d time.Duration, stop <-chan struct{}) error {
	if d <= 0 {
		return nil
	}
	wake := time.Now().Add(d)
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-stop:
		return ratelimit.ErrClosed
	case <-ctx.Done():
		if !time.Now().Before(wake) {
			return nil
		}
		return ctx.Err()
	}
}

// Reserve asks a shaper for a place in its queue whose turn comes within maxDelay, or at
// any time when bounded is false. It answers as AllowN does, and, when the turn would come
// too late, with Allowed false and RetryAfter zero.
type Reserve func(ctx context.Context, maxDelay time.Duration, bounded bool) (ratelimit.Result, error)

// Queue is a shaper's Wait: it reserves a place and holds until its turn. When the queue is
// full it holds until a place frees up and tries again. It fails at once, with an error
// wrapping context.DeadlineExceeded, when the turn, or the queue's draining, would come
// after ctx's deadline; it returns ctx's error when ctx ends while it holds. A place taken
// before ctx ended stays taken: the request it held has gone by.
func Queue(ctx context.Context, reserve Reserve, stop <-chan struct{}) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var maxDelay time.Duration
		deadline, bounded := ctx.Deadline()
		if bounded {
			maxDelay = max(time.Until(deadline), 0)
		}
		res, err := reserve(ctx, maxDelay, bounded)
		if err != nil {
			return err
		}
		switch {
		case res.Allowed:
			return Hold(ctx, res.Delay, stop)
		case res.RetryAfter == 0:
			return fmt.Errorf("ratelimit: the queue would hold the request %v, past the context deadline: %w",
				res.Delay, context.DeadlineExceeded)
		case bounded && time.Until(deadline) < res.ResetAfter:
			// The queue is full. A place frees up after RetryAfter, and its turn comes when
			// the queue has drained: ResetAfter from now at the earliest.
			return fmt.Errorf("ratelimit: the queue is full and drains in %v, past the context deadline: %w",
				res.ResetAfter, context.DeadlineExceeded)
		}
		if err := Hold(ctx, res.RetryAfter, stop); err != nil {
			return err
		}
	}
}
