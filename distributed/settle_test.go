package distributed_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// counting counts the scripts a client runs (EVALSHA, EVAL): a new connection's own
// commands (HELLO, CLIENT SETINFO) are not a decision's.
type counting struct{ n atomic.Int64 }

func scripted(cmd redis.Cmder) bool {
	name := cmd.Name()
	return name == "evalsha" || name == "eval" || name == "evalsha_ro" || name == "eval_ro"
}

func (c *counting) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *counting) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if scripted(cmd) {
			c.n.Add(1)
		}
		return next(ctx, cmd)
	}
}

func (c *counting) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if scripted(cmd) {
				c.n.Add(1)
			}
		}
		return next(ctx, cmds)
	}
}

// TestSettleNoDrift is local's TestSettleNoDrift on the scripts, with 20,000 settles rather
// than a million (each is a round trip; the arithmetic is the same float64 operations, and a
// TAT in one binade adds whole tokens exactly however many there are), each answered exactly
// as the local backend answers it on the same clock, and each one command: one script for a
// settle, an underrun's (multi.lua's refund) or an overrun's (settle.lua).
func TestSettleNoDrift(t *testing.T) {
	t.Parallel()
	client := newClient(t, redistest.NewServer(t).Addr())
	hook := &counting{}
	client.AddHook(hook)
	clock := ratelimittest.NewClock()
	l := newLimiter(t, client, clock)
	twin := local.New(local.WithClock(clock.Now), local.WithCleanupInterval(0))
	t.Cleanup(func() { _ = twin.Close() })
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1000, Burst: 1000}
	rng := rand.New(rand.NewPCG(40, 7))
	for _, s := range []ratelimit.Settler{l, twin} {
		// An overrun and an underrun: both scripts loaded, and the bucket full again.
		_, err := s.Settle(ctx, "k", limit, ratelimit.Charge{}, 0, 1)
		require.NoError(t, err)
		_, err = s.Settle(ctx, "k", limit, ratelimit.Charge{}, 1, 0)
		require.NoError(t, err)
	}
	d := 0
	before := hook.n.Load()
	const settles = 20_000
	for i := range settles {
		reserved, actual := rng.IntN(40), rng.IntN(40)
		res, err := l.Settle(ctx, "k", limit, ratelimit.Charge{}, reserved, actual)
		want, wantErr := twin.Settle(ctx, "k", limit, ratelimit.Charge{}, reserved, actual)
		if res != want || errors.Is(err, ratelimit.ErrExceedsBurst) != errors.Is(wantErr, ratelimit.ErrExceedsBurst) {
			t.Fatalf("settle %d of %d to %d: %+v, %v; the local backend: %+v, %v", i, reserved, actual, res, err, want, wantErr)
		}
		if over := actual - reserved; d+over > 2*limit.Burst {
			require.ErrorIs(t, err, ratelimit.ErrExceedsBurst, "settle %d", i)
		} else {
			require.NoError(t, err, "settle %d", i)
			d = max(d+over, 0)
		}
		if i%100 == 99 {
			exact := time.Duration(d) * time.Millisecond
			if d < limit.Burst {
				exact += time.Millisecond // Peek's token
			}
			require.Equal(t, exact, res.ResetAfter, "after %d settles", i+1)
			step := rng.IntN(d + 1)
			clock.Advance(time.Duration(step) * time.Millisecond)
			d -= step
		}
	}
	require.Equal(t, int64(settles), hook.n.Load()-before, "one script a settle")
}
