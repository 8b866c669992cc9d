package distributed

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit/internal/nilarg"
	"github.com/sluice-go/ratelimit/internal/scriptsrc"
	"github.com/sluice-go/ratelimit/internal/testhook"
)

// Client is the one thing a Limiter asks of a Redis client when it is not a go-redis one
// (NewWith): to run a Lua script. Everything else (the deadline, the algorithms, AllowAll's
// grouping by hash slot, the errors) is the Limiter's, the same on every client. The
// module github.com/sluice-go/ratelimit/valkeyclient implements it on valkey-go.
//
// A Client must stop waiting when ctx ends, and report an error reply of Redis (NOSCRIPT,
// WRONGTYPE, a script's own) as an error that errors.As finds a ReplyError in, its text
// the reply's: the Limiter tells a bucket's fault from Redis's by it.
type Client interface {
	// Eval runs the script src, whose SHA1 in hex is sha, on keys and args, and appends
	// the integers it answered to dst: one for an integer, each of an array's. It runs
	// EVALSHA and, when the server lacks the script (NOSCRIPT), loads it or runs EVAL.
	// args hold strings, []byte, ints, int64s and float64s, the last formatted as
	// strconv.FormatFloat(f, 'f', -1, 64) does. On a sharded client, keys all lie in one
	// hash slot and the call goes to its master.
	Eval(ctx context.Context, sha, src string, keys []string, args []any, dst []int64) ([]int64, error)
	// Load loads the script src into every server that holds keys (SCRIPT LOAD).
	Load(ctx context.Context, src string) error
	// Sharded reports whether the client spreads keys over servers by hash slot, as a
	// Redis Cluster does.
	Sharded() bool
}

// ReplyError is an error reply of Redis, as a Client reports it. go-redis's errors (the
// redis.Error interface) are ReplyErrors too.
type ReplyError interface {
	error
	RedisError()
}

// NewWith returns a Limiter that keeps its buckets in Redis through c, with the same
// scripts, options and behaviour as New's on a go-redis client, and without New's hook on
// the client: a deadline's error names no earlier dial error. It returns an error for a nil
// c, and otherwise as New does.
func NewWith(c Client, opts ...Option) (*Limiter, error) {
	if nilarg.Is(c) {
		return nil, errors.New("distributed: NewWith: nil client")
	}
	return newLimiter(nil, c, opts)
}

// evalWith runs script through the Limiter's Client (NewWith), its integers in r.vals
// when r holds the single-key request.
func (l *Limiter) evalWith(ctx context.Context, script *redis.Script, keys []string, argv []any, r *request) ([]int64, error) {
	var dst []int64
	if r != nil {
		dst = r.vals[:0]
	}
	return l.seam.Eval(ctx, script.Hash(), scriptsrc.Of(script), keys, argv, dst)
}

// load loads script through the Limiter's Client, or its go-redis client.
func (l *Limiter) load(ctx context.Context, script *redis.Script) error {
	if l.seam != nil {
		return l.seam.Load(ctx, scriptsrc.Of(script))
	}
	return script.Load(ctx, l.client).Err()
}

func init() {
	testhook.DistributedClock = func(now func() time.Time) any {
		return Option(func(o *options) { o.now, o.skew = now, time.Hour })
	}
}
