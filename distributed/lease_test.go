package distributed_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// TestLease plays one leased bucket, 100/s with a burst of 20, on a test clock: partial
// grants, a retry answered once, a stale request, a return, a holder's exit and a dead
// holder's tokens coming back when its record ends.
func TestLease(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock()
	l, err := distributed.New(newClient(t, server.Addr()), distributed.WithPrefix(uniquePrefix()),
		distributed.WithTimeout(10*time.Second), distributed.WithClock(clock.Now))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	ctx, limit, ms := context.Background(), ratelimit.Limit{Rate: 100, Burst: 20}, time.Millisecond
	lease := func(id string, seq uint64, want, held, ret int) distributed.LeaseGrant {
		t.Helper()
		g, err := l.Lease(ctx, "k", limit, distributed.LeaseRequest{Instance: id, Seq: seq, Want: want,
			Held: held, Return: ret, Lease: time.Second})
		require.NoError(t, err)
		g.At = time.Time{}
		return g
	}

	// a takes 12 of 20; b asks 12 and gets the 8 left (a partial grant); a retry of b's
	// request gets the same answer and takes nothing more.
	assert.Equal(t, distributed.LeaseGrant{Tokens: 12, Remaining: 8, ResetAfter: 120 * ms}, lease("a", 1, 12, 0, 0))
	assert.Equal(t, distributed.LeaseGrant{Tokens: 8, ResetAfter: 200 * ms}, lease("b", 1, 12, 0, 0))
	assert.Equal(t, distributed.LeaseGrant{Tokens: 8, ResetAfter: 200 * ms, Replayed: true}, lease("b", 1, 12, 0, 0))
	// The bucket is empty: b's next request is refused, and told when its share (half the
	// refill: two holders) covers 12 tokens, 240 ms. An old seq does nothing.
	assert.Equal(t, distributed.LeaseGrant{RetryAfter: 240 * ms, ResetAfter: 200 * ms}, lease("b", 2, 12, 8, 0))
	assert.Equal(t, distributed.LeaseGrant{ResetAfter: 200 * ms, Stale: true}, lease("b", 1, 12, 0, 0))

	// 50 ms later 5 tokens are back. a gives back 4 of its 12 and keeps 8: 9 are there.
	clock.Advance(50 * ms)
	assert.Equal(t, distributed.LeaseGrant{Tokens: 9, ResetAfter: 200 * ms}, lease("a", 2, 10, 8, 4))
	// a leaves, giving back its 17: they are in the bucket at once.
	assert.Equal(t, distributed.LeaseGrant{Remaining: 17, ResetAfter: 30 * ms}, lease("a", 3, 0, 0, 17))

	// b dies holding 8. 1 s after its last request its record ends and its 8 come back:
	// the bucket had refilled anyway, so c finds it full, then b's record is gone.
	clock.Advance(time.Second)
	assert.Equal(t, distributed.LeaseGrant{Tokens: 20, ResetAfter: 200 * ms}, lease("c", 1, 20, 0, 0))
	fields, err := server.Do("HKEYS", redisKeyOf(t, server))
	require.NoError(t, err)
	assert.ElementsMatch(t, []any{"t", "c"}, fields)
}

// TestLeaseDeadHolderGivesBack: a holder that dies holding tokens of an empty, busy bucket
// gives them back when its record ends, not before.
func TestLeaseDeadHolderGivesBack(t *testing.T) {
	server := redistest.NewServer(t)
	clock := ratelimittest.NewClock()
	l, err := distributed.New(newClient(t, server.Addr()), distributed.WithPrefix(uniquePrefix()),
		distributed.WithTimeout(10*time.Second), distributed.WithClock(clock.Now))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	ctx, limit, ms := context.Background(), ratelimit.Limit{Rate: 100, Burst: 20}, time.Millisecond
	lease := func(id string, seq uint64, want, held int, d time.Duration) int {
		t.Helper()
		g, err := l.Lease(ctx, "k", limit, distributed.LeaseRequest{Instance: id, Seq: seq, Want: want, Held: held, Lease: d})
		require.NoError(t, err)
		return g.Tokens
	}
	// The dead one takes 10 for 300 ms; the live one drains the rest and asks every 100 ms
	// for what has come back (10 tokens), keeping nothing, its lease long.
	require.Equal(t, 10, lease("dead", 1, 10, 0, 300*ms))
	require.Equal(t, 10, lease("live", 1, 20, 0, time.Hour))
	for i, want := range []int{10, 10, 20} {
		clock.Advance(100 * ms)
		// At 300 ms the dead one's record has ended: its 10 are back beside the refill's.
		assert.Equal(t, want, lease("live", uint64(i+2), 20, 0, time.Hour), "at %d ms", 100*(i+1))
	}
}

// TestLeaseRefusesOtherAlgorithms: only a plain token bucket is leased, and bad fields are
// refused before any round trip.
func TestLeaseRefusesOtherAlgorithms(t *testing.T) {
	l, err := distributed.New(newClient(t, "127.0.0.1:1"))
	require.NoError(t, err)
	ctx, r := context.Background(), distributed.LeaseRequest{Instance: "a", Seq: 1, Want: 1, Lease: time.Second}
	for _, limit := range []ratelimit.Limit{
		{Rate: 1, Burst: 1, Algorithm: ratelimit.FixedWindow},
		{Rate: 1, Burst: 1, Warmup: time.Second},
		{Rate: 1, Burst: 1, KeepUsage: true},
	} {
		_, err := l.Lease(ctx, "k", limit, r)
		assert.ErrorIs(t, err, ratelimit.ErrNotSupported, "%v", limit)
	}
	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	for _, bad := range []distributed.LeaseRequest{
		{Seq: 1, Want: 1, Lease: time.Second},
		{Instance: "a b", Seq: 1, Want: 1, Lease: time.Second},
		{Instance: "a", Want: 1, Lease: time.Second},
		{Instance: "a", Seq: 1, Want: 3, Lease: time.Second},
		{Instance: "a", Seq: 1, Want: 1, Held: -1, Lease: time.Second},
		{Instance: "a", Seq: 1, Want: 1},
	} {
		_, err := l.Lease(ctx, "k", limit, bad)
		assert.ErrorIs(t, err, ratelimit.ErrInvalidArgument, "%+v", bad)
	}
}

// redisKeyOf returns the one key server holds.
func redisKeyOf(t *testing.T, server *redistest.Server) string {
	t.Helper()
	keys, err := server.Do("KEYS", "*")
	require.NoError(t, err)
	require.Len(t, keys, 1)
	return keys.([]any)[0].(string)
}
