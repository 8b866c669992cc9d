package distributed

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit/internal/nilarg"
	"github.com/sluice-go/ratelimit/internal/scriptsrc"
)

// Client is the one thing a Limiter asks of a Redis client when it is not a go-redis one
// (NewWith): to run a Lua script. It is the ratelimit distributed package's Client, so
// that one value serves both packages; the module
// github.com/sluice-go/ratelimit/valkeyclient implements it on valkey-go.
//
// A Client must stop waiting when ctx ends. Eval runs the script src, whose SHA1 in hex is
// sha, on keys and args (strings, []byte, ints, int64s), loading it when the server lacks
// it (NOSCRIPT), and appends the integers it answered to dst: one for an integer, each of
// an array's. Load loads src into every server that holds keys. Sharded reports whether
// keys are spread over servers by hash slot.
type Client interface {
	Eval(ctx context.Context, sha, src string, keys []string, args []any, dst []int64) ([]int64, error)
	Load(ctx context.Context, src string) error
	Sharded() bool
}

// NewWith returns a Limiter that keeps its permits in Redis through c, with the same
// scripts, options and behaviour as New's on a go-redis client, but for the wake-ups: a
// waiter asks again every WithPoll, as with a client that cannot subscribe. It returns an
// error for a nil c, and otherwise as New does.
func NewWith(c Client, opts ...Option) (*Limiter, error) {
	if nilarg.Is(c) {
		return nil, errors.New("distributed: NewWith: nil client")
	}
	return newLimiter(nil, c, opts)
}

// run runs script on key and args and returns its integers: through the Client of
// NewWith, or the go-redis client.
func (l *Limiter) run(ctx context.Context, script *redis.Script, key string, args []any) ([]int64, error) {
	if l.seam != nil {
		return l.seam.Eval(ctx, script.Hash(), scriptsrc.Of(script), []string{key}, args, nil)
	}
	cmd := script.Run(ctx, l.client, []string{key}, args...)
	if n, err := cmd.Int64(); err == nil {
		return []int64{n}, nil
	}
	return cmd.Int64Slice()
}
