package distributed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
)

// Check asks Redis, within ctx, whether the limiter can decide: it loads the scripts of every
// algorithm into every server that holds buckets, which on a Redis Cluster first
// loads the client's map of the slots. It returns nil, or an error that says what went
// wrong (a refused connection, an unknown host, a server that is not a Cluster node, the
// deadline), naming no key. New never calls it, so that a service starts while Redis is
// down; call it at start-up to fail early or to warm a Cluster client, with a deadline of
// your choosing: Check returns when ctx ends, whatever the client's settings.
func (l *Limiter) Check(ctx context.Context) error {
	if l.closed.Load() {
		return ratelimit.ErrClosed
	}
	// Every algorithm's: any limit may name its own.
	client := l.now != nil
	scripts := []*redis.Script{multi.on(client), warmup.scripts.on(client)}
	for _, a := range algorithms {
		scripts = append(scripts, a.scripts.on(client))
	}
	done := make(chan error, 1)
	go func() { // the client may ignore ctx while it dials: see WithTimeout
		for _, s := range scripts {
			if s == nil {
				continue
			}
			if err := l.load(ctx, s); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			err = context.Cause(ctx) // the client's own report of the deadline says no more
		}
		return l.network(fmt.Errorf("distributed: Check: %w", err))
	}
	l.warm.Store(true)
	return nil
}

// network returns err, with, when it reports a deadline, the last error the client met on
// the network, which the deadline hides: go-redis retries a failed dial until the context
// ends, and then reports only that the context ended.
func (l *Limiter) network(err error) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if last := l.netErr.Load(); last != nil {
		return fmt.Errorf("%w; last network error: %v", err, *last)
	}
	return err
}

// dialErrors is a go-redis hook that keeps the error of the client's last dial in last, or
// nil when it succeeded. An error of the dial's own context says nothing of the network,
// and is not kept. A dial error names an address, never a key.
type dialErrors struct {
	last *atomic.Pointer[error]
}

var _ redis.Hook = dialErrors{}

func (h dialErrors) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		switch {
		case err == nil:
			h.last.Store(nil)
		case ctx.Err() == nil || !errors.Is(err, ctx.Err()):
			h.last.Store(&err)
		}
		return conn, err
	}
}

// ProcessHook and ProcessPipelineHook leave commands alone: a nil hook is skipped.
func (dialErrors) ProcessHook(redis.ProcessHook) redis.ProcessHook { return nil }

func (dialErrors) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return nil
}

// watchDials adds a dialErrors hook, keeping into last, to client, or, on a Cluster or a
// Ring, to every node client it creates from now on.
func watchDials(client redis.Scripter, last *atomic.Pointer[error]) {
	h := dialErrors{last: last}
	switch c := client.(type) {
	case *redis.Client:
		c.AddHook(h)
	case *redis.ClusterClient:
		c.OnNewNode(func(node *redis.Client) { node.AddHook(h) })
	case *redis.Ring:
		c.OnNewNode(func(shard *redis.Client) { shard.AddHook(h) })
	}
}
