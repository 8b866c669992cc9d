// Package valkeyclient runs the kit's Redis backends on valkey-go
// (github.com/valkey-io/valkey-go), the client that pipelines every concurrent command on
// one connection by itself: a Client is a distributed.Client of both
// github.com/sluice-go/ratelimit/distributed and its concurrency/distributed, with the same
// scripts, options and behaviour as on go-redis, on one node, Sentinel or a Cluster.
//
//	vc, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{"localhost:6379"}})
//	...
//	limiter, err := distributed.NewWith(valkeyclient.New(vc))
package valkeyclient

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"unsafe"

	"github.com/valkey-io/valkey-go"
)

// Client runs Lua scripts through a valkey-go client. It is safe for concurrent use and
// holds nothing but the client, which stays the caller's to close.
type Client struct {
	c       valkey.Client
	sharded bool
}

// New returns a Client on c: a valkey-go client of one node, Sentinel or a Cluster. It
// panics on a nil c.
func New(c valkey.Client) *Client {
	if c == nil {
		panic("valkeyclient: New: nil client")
	}
	return &Client{c: c, sharded: c.Mode() == valkey.ClientModeCluster}
}

// Sharded reports whether the client is a Cluster's, which spreads keys by hash slot.
func (c *Client) Sharded() bool { return c.sharded }

// Eval runs the script src, whose SHA1 in hex is sha, on keys and args with EVALSHA, and
// with EVAL when the server lacks it (NOSCRIPT), and appends the integers it answered to
// dst. An error reply of Redis comes back as an error with Redis's text that has the
// method RedisError, as go-redis's errors do.
func (c *Client) Eval(ctx context.Context, sha, src string, keys []string, args []any, dst []int64) ([]int64, error) {
	a := argsPool.Get().(*argStrings)
	strs := a.format(args)
	resp := c.c.Do(ctx, c.c.B().Evalsha().Sha1(sha).Numkeys(int64(len(keys))).Key(keys...).Arg(strs...).Build())
	if e, ok := valkey.IsValkeyErr(resp.Error()); ok && e.IsNoScript() {
		resp = c.c.Do(ctx, c.c.B().Eval().Script(src).Numkeys(int64(len(keys))).Key(keys...).Arg(strs...).Build())
	}
	dst, err := ints(resp, dst)
	if resp.NonValkeyError() == nil {
		// Redis answered, so the command has been written: its arguments are free. After
		// a failure the write may still be queued, and the buffer goes to the collector.
		argsPool.Put(a)
	}
	return dst, err
}

// Load loads the script src into every node of the client (SCRIPT LOAD).
func (c *Client) Load(ctx context.Context, src string) error {
	for _, n := range c.c.Nodes() {
		if err := n.Do(ctx, n.B().ScriptLoad().Script(src).Build()).Error(); err != nil {
			return wrap(err)
		}
	}
	return nil
}

// ints appends the integers of a script's answer to dst: one integer, or an array of them.
func ints(resp valkey.ValkeyResult, dst []int64) ([]int64, error) {
	if err := resp.Error(); err != nil {
		return nil, wrap(err)
	}
	msg, _ := resp.ToMessage()
	if msg.IsInt64() {
		n, _ := msg.AsInt64()
		return append(dst, n), nil
	}
	vals, err := msg.ToArray()
	if err != nil {
		return nil, fmt.Errorf("the script returned neither an integer nor an array: %w", err)
	}
	for i := range vals {
		n, err := vals[i].ToInt64()
		if err != nil {
			return nil, fmt.Errorf("the script returned a non-integer: %w", err)
		}
		dst = append(dst, n)
	}
	return dst, nil
}

// wrap returns err, or, for an error reply of Redis, a replyError holding it.
func wrap(err error) error {
	if e, ok := valkey.IsValkeyErr(err); ok {
		return replyError{e}
	}
	return err
}

// replyError is an error reply of Redis, told from a failure of the network by its method
// RedisError (go-redis's redis.Error, and the kit's distributed.ReplyError).
type replyError struct{ e *valkey.ValkeyError }

func (r replyError) Error() string { return r.e.Error() }
func (r replyError) Unwrap() error { return r.e }
func (replyError) RedisError()     {}

// argStrings formats a call's arguments as strings in one buffer, reused across calls.
type argStrings struct {
	buf  []byte
	ends []int
	strs []string
}

var argsPool = sync.Pool{New: func() any { return new(argStrings) }}

// format returns args as valkey-go takes them, formatted as go-redis formats them: the
// strings as they are, numbers in a.buf (a float64 as strconv.FormatFloat(f, 'f', -1, 64)).
// The strings point into a.buf, which the next format overwrites.
func (a *argStrings) format(args []any) []string {
	a.buf, a.ends, a.strs = a.buf[:0], a.ends[:0], a.strs[:0]
	for _, v := range args {
		switch v := v.(type) {
		case string:
			a.buf = append(a.buf, v...)
		case []byte:
			a.buf = append(a.buf, v...)
		case int:
			a.buf = strconv.AppendInt(a.buf, int64(v), 10)
		case *int:
			a.buf = strconv.AppendInt(a.buf, int64(*v), 10)
		case int64:
			a.buf = strconv.AppendInt(a.buf, v, 10)
		case float64:
			a.buf = strconv.AppendFloat(a.buf, v, 'f', -1, 64)
		case bool:
			if v {
				a.buf = append(a.buf, '1')
			} else {
				a.buf = append(a.buf, '0')
			}
		case nil:
		default:
			a.buf = fmt.Append(a.buf, v)
		}
		a.ends = append(a.ends, len(a.buf))
	}
	start := 0
	for _, end := range a.ends { // a.buf grows no more: the strings can point into it
		a.strs = append(a.strs, unsafe.String(unsafe.SliceData(a.buf[start:]), end-start))
		start = end
	}
	return a.strs
}
