package distributed

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Concurrent decisions share round trips. Up to maxDirect decisions at a time go to Redis
// each on its own, as single EVALSHA calls. A decision that arrives while that many are on
// the wire joins a queue instead; the first direct call to finish hands the whole queue to a
// goroutine that sends it as one pipeline (up to maxBatch scripts per write), and keeps doing
// so while decisions keep queueing. Redis still runs one script per decision, atomically, in
// arrival order; what the pipeline saves is the write, the read and the wake-up that each
// call would cost the client and the server on its own: under load, most of the work of a
// small script.
//
// A lone caller never waits for a batch to fill, so latency at low load is a plain round
// trip's.
const (
	maxDirect = 8
	maxBatch  = 256
)

// pipeliner is a client that can send pipelines: every go-redis client can.
type pipeliner interface {
	redis.Scripter
	Pipeline() redis.Pipeliner
}

// call is one decision waiting in the queue.
type call struct {
	script *redis.Script
	keys   []string
	argv   []any
	req    *request // the single-key request that holds keys and argv, or nil
	vals   []int64
	err    error
	done   chan struct{} // closed once vals and err are set
}

// batcher sends queued decisions as pipelines. New makes one when the client can pipeline.
type batcher struct {
	client pipeliner
	bound  *bound // bounds each pipeline; nil means the client's own timeouts

	mu     sync.Mutex
	active int     // direct calls and pipeline senders at work, at most maxDirect
	queue  []*call // decisions waiting for a pipeline

	// queued, set by tests only, runs when a decision has joined the queue, before it waits
	// for its answer: there, every call on the wire may return.
	queued func()
}

// enter decides whether a decision goes to Redis directly or joins the queue, in one
// critical section: were the two steps apart, every call on the wire could return in
// between, and the decision would wait in the queue with nobody left to send it, until its
// deadline, on a healthy Redis. enter returns nil when the caller may go directly, and the
// caller must then call release when done; otherwise it returns the queued call, to await.
func (b *batcher) enter(script *redis.Script, keys []string, argv []any, r *request) *call {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.active < maxDirect {
		b.active++
		return nil
	}
	c := &call{script: script, keys: keys, argv: argv, req: r, done: make(chan struct{})}
	b.queue = append(b.queue, c)
	return c
}

// release ends a direct call. Decisions that queued up meanwhile leave in a pipeline sent by a
// goroutine that takes over the caller's place, so that the caller returns at once.
func (b *batcher) release() {
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.active--
		b.mu.Unlock()
		return
	}
	batch := b.take()
	b.mu.Unlock()
	go b.serve(batch)
}

// take removes up to maxBatch decisions from the front of the queue. The caller holds b.mu.
func (b *batcher) take() []*call {
	n := min(len(b.queue), maxBatch)
	batch := slices.Clone(b.queue[:n])
	clear(b.queue[:n])
	b.queue = b.queue[n:]
	if len(b.queue) == 0 {
		b.queue = nil
	}
	return batch
}

// serve sends batch, then every batch that queued meanwhile, until the queue is empty.
func (b *batcher) serve(batch []*call) {
	for {
		b.send(batch)
		b.mu.Lock()
		if len(b.queue) == 0 {
			b.active--
			b.mu.Unlock()
			return
		}
		batch = b.take()
		b.mu.Unlock()
	}
}

// await waits for the answer to c, a decision that enter queued, or for ctx (the call's,
// with the limiter's deadline) or its caller's context to end. A decision that ends so
// before it was sent is withdrawn: Redis never sees it.
func (b *batcher) await(ctx, caller context.Context, c *call) ([]int64, error) {
	if b.queued != nil {
		b.queued()
	}
	select {
	case <-c.done:
		return reply(ctx, caller, c.vals, c.err)
	case <-ctx.Done():
		b.withdraw(c)
		return nil, fmt.Errorf("distributed: %w", cause(ctx))
	case <-caller.Done():
		b.withdraw(c)
		return nil, fmt.Errorf("distributed: %w", context.Cause(caller))
	}
}

// withdraw removes c from the queue if it is still there.
func (b *batcher) withdraw(c *call) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.queue, c); i >= 0 {
		b.queue = slices.Delete(b.queue, i, i+1)
	}
}

// send runs batch as one pipeline of EVALSHAs, then, if Redis had lost a script (SCRIPT
// FLUSH, restart, failover), sends the calls that failed with NOSCRIPT again with EVAL.
func (b *batcher) send(batch []*call) {
	var ctx context.Context = context.Background()
	if b.bound != nil {
		c := new(bounded)
		b.bound.set(c, ctx, time.Now())
		ctx = c
	}
	cmds := b.pipeline(ctx, batch, true)
	var again []*call
	for i, c := range batch {
		if err := cmds[i].Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			again = append(again, c)
			continue
		}
		c.vals, c.err = ints(cmds[i], c.req)
		close(c.done)
	}
	if len(again) == 0 {
		return
	}
	cmds = b.pipeline(ctx, again, false)
	for i, c := range again {
		c.vals, c.err = ints(cmds[i], c.req)
		close(c.done)
	}
}

// pipeline sends one command per call in one pipeline and returns them: EVALSHA (for a
// single-key request, the command its request holds: see evalSHA), or EVAL when sha is
// false.
func (b *batcher) pipeline(ctx context.Context, batch []*call, sha bool) []*redis.Cmd {
	pipe := b.client.Pipeline()
	cmds := make([]*redis.Cmd, len(batch))
	for i, c := range batch {
		switch {
		case !sha:
			cmds[i] = c.script.Eval(ctx, pipe, c.keys, c.argv...)
		case c.req != nil:
			cmds[i] = c.req.evalSHA(ctx, c.script)
			_ = pipe.Process(ctx, cmds[i])
		default:
			cmds[i] = c.script.EvalSha(ctx, pipe, c.keys, c.argv...)
		}
	}
	// Exec's error is the first command's; each command carries its own.
	_, _ = pipe.Exec(ctx)
	return cmds
}
