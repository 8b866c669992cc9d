package distributed_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/concurrency/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// seamClient is a distributed.Client on a go-redis client through its plain script
// commands, so that the root module's tests go through NewWith's seam too (the
// valkeyclient module runs the same on valkey-go).
type seamClient struct{ c redis.UniversalClient }

func (s seamClient) Eval(ctx context.Context, sha, src string, keys []string, args []any, dst []int64) ([]int64, error) {
	cmd := s.c.EvalSha(ctx, sha, keys, args...)
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = s.c.Eval(ctx, src, keys, args...)
	}
	v, err := cmd.Result()
	if err != nil {
		return nil, err
	}
	switch v := v.(type) {
	case int64:
		return append(dst, v), nil
	case []any:
		for _, e := range v {
			n, _ := e.(int64)
			dst = append(dst, n)
		}
	}
	return dst, nil
}

func (s seamClient) Load(ctx context.Context, src string) error {
	return s.c.ScriptLoad(ctx, src).Err()
}

func (seamClient) Sharded() bool { return false }

// TestNewWith runs a limiter through the seam: 100 callers never hold more than max
// permits at once, and all are served; a key of another type is a bucket's fault.
func TestNewWith(t *testing.T) {
	_, err := distributed.NewWith(nil)
	require.EqualError(t, err, "distributed: NewWith: nil client")

	client := newClient(t, redistest.NewServer(t).Addr())
	// No per-call bound on a loaded machine (the test's deadline applies), and errors
	// returned rather than degraded to a share: every permit is Redis's.
	l, err := distributed.NewWith(seamClient{client}, distributed.WithTimeout(-1),
		distributed.WithPoll(100*time.Millisecond), distributed.WithOnFailure(distributed.ReturnError))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	var running, most, served atomic.Int64
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			p, err := l.Acquire(t.Context(), "seam", 3)
			if !assert.NoError(t, err) {
				return
			}
			n := running.Add(1)
			for old := most.Load(); n > old && !most.CompareAndSwap(old, n); old = most.Load() {
			}
			held, err := client.ZCount(t.Context(), distributed.DefaultPrefix+"seam", "(0", "+inf").Result()
			assert.NoError(t, err)
			assert.LessOrEqual(t, held, int64(3))
			served.Add(1)
			running.Add(-1)
			p.Release()
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, most.Load(), int64(3))
	assert.Equal(t, int64(100), served.Load())
	assert.Equal(t, int64(0), holders(t, client, "seam"))

	require.NoError(t, client.Set(t.Context(), distributed.DefaultPrefix+"str", "x", 0).Err())
	_, _, err = l.TryAcquire(t.Context(), "str", 1)
	assert.ErrorIs(t, err, ratelimit.ErrInvalidState)
}
