package fallback_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// countedMulti is a primary that counts the AllowAll calls that reach it.
type countedMulti struct {
	*local.Limiter
	calls atomic.Int64
}

func (c *countedMulti) AllowAll(ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, error) {
	c.calls.Add(1)
	return c.Limiter.AllowAll(ctx, reqs)
}

// listRig is a Limiter with its denial cache on a counted local primary, and its twin
// without a cache on a local primary of its own, both on one fake clock: every call goes to
// both, and the twin's answer is the primary's, which the Limiter's must equal.
type listRig struct {
	clock   *ratelimittest.Clock
	primary *countedMulti
	l, twin *fallback.Limiter
}

func newListRig(t *testing.T) *listRig {
	clock := ratelimittest.NewClock()
	r := &listRig{clock: clock, primary: &countedMulti{Limiter: newLocal(t, clock)}}
	r.l = fallback.New(r.primary, nil, fallback.WithClock(clock.Now))
	r.twin = fallback.New(newLocal(t, clock), nil, fallback.WithClock(clock.Now), fallback.WithDenialCacheSize(-1))
	return r
}

// all decides reqs with both, requires the same answer, and returns it and whether the
// Limiter's came from its cache.
func (r *listRig) all(t *testing.T, ctx context.Context, reqs []ratelimit.Request) (ratelimit.MultiResult, bool) {
	t.Helper()
	want, _, err := r.twin.AllowAllOrigin(ctx, reqs)
	require.NoError(t, err)
	got, origin, err := r.l.AllowAllOrigin(ctx, reqs)
	require.NoError(t, err)
	require.Equal(t, want, got)
	return got, origin.Cached
}

// allowN asks both for n tokens of (key, limit) and requires the same answer.
func (r *listRig) allowN(t *testing.T, ctx context.Context, key string, limit ratelimit.Limit, n int) ratelimit.Result {
	t.Helper()
	want, err := r.twin.AllowN(ctx, key, limit, n)
	require.NoError(t, err)
	got, err := r.l.AllowN(ctx, key, limit, n)
	require.NoError(t, err)
	require.Equal(t, want, got)
	return got
}

// Fixed windows of 1 s (hot: 1 a window; a: 10) and 2 s (b: 200), from the fake clock's
// start, a whole second; z is unlimited.
var (
	hotWindow = ratelimit.Limit{Rate: 1, Burst: 1, Algorithm: ratelimit.FixedWindow}
	aWindow   = ratelimit.Limit{Rate: 10, Burst: 10, Algorithm: ratelimit.FixedWindow}
	bWindow   = ratelimit.Limit{Rate: 100, Burst: 200, Algorithm: ratelimit.FixedWindow}
)

func hotList() []ratelimit.Request {
	return []ratelimit.Request{
		{Key: "hot", Limit: hotWindow, Name: "hot"},
		{Key: "a", Limit: aWindow, Name: "a"},
		{Key: "b", Limit: bWindow, Name: "b"},
		{Key: "z", Name: "z"},
	}
}

// TestDenialCacheAllowAllTimeline: a list whose hot request runs out is denied by the
// primary, then by the cache, with the primary's Results aged, charging nothing, until a
// bucket of the list changes through the Limiter (a charge, a reset, a refund), another
// list or priority is asked, or the denial ends; each answer equals the primary's.
func TestDenialCacheAllowAllTimeline(t *testing.T) {
	r := newListRig(t)
	ctx := context.Background()
	list := hotList()
	step := func(name string, wantCached bool, wantCalls int64) ratelimit.MultiResult {
		t.Helper()
		mr, cached := r.all(t, ctx, list)
		require.Equal(t, wantCached, cached, name)
		require.Equal(t, wantCalls, r.primary.calls.Load(), name)
		return mr
	}

	mr := step("the first is admitted", false, 1)
	require.True(t, mr.Allowed)
	mr = step("the hot bucket is empty: the primary denies", false, 2)
	require.False(t, mr.Allowed)
	require.Equal(t, 0, mr.Binding)
	require.Equal(t, time.Second, mr.Results[mr.Binding].RetryAfter) // the hot window's end
	// a and b alone: 9 and 199 left, 8 and 198 after one more.
	require.Equal(t, []int{0, 8, 198, 0}, remainings(mr))

	r.clock.Advance(250 * time.Millisecond)
	mr = step("the cache denies", true, 2)
	require.Equal(t, 750*time.Millisecond, mr.Results[mr.Binding].RetryAfter)
	require.Equal(t, 750*time.Millisecond, mr.Results[1].ResetAfter)
	require.Equal(t, 1750*time.Millisecond, mr.Results[2].ResetAfter)
	require.Equal(t, []int{0, 8, 198, 0}, remainings(mr), "nothing was charged")
	step("again", true, 2)

	// Another list of the same keys in another order, and the same at another priority.
	swapped := []ratelimit.Request{list[1], list[0], list[2], list[3]}
	_, cached := r.all(t, ctx, swapped)
	require.False(t, cached)
	require.Equal(t, int64(3), r.primary.calls.Load())
	_, cached = r.all(t, priority.With(ctx, priority.Normal), list)
	require.False(t, cached)
	require.Equal(t, int64(4), r.primary.calls.Load())
	step("the first list is still remembered", true, 4)

	// A charge of a through the Limiter: a has one token less, which only the primary knows.
	require.True(t, r.allowN(t, ctx, "a", aWindow, 1).Allowed)
	mr = step("a changed: the primary denies", false, 5)
	require.Equal(t, []int{0, 7, 198, 0}, remainings(mr))
	step("remembered again", true, 5)

	// A refund of b, of a charge the first list took.
	first := ratelimit.Charge{At: r.clock.Now().Add(-250 * time.Millisecond), Part: "primary"}
	for _, l := range []*fallback.Limiter{r.twin, r.l} {
		_, err := ins(l).Refund(ctx, "b", bWindow, 1, first)
		require.NoError(t, err)
	}
	mr = step("b refunded: the primary denies", false, 6)
	require.Equal(t, []int{0, 7, 199, 0}, remainings(mr))
	step("remembered again", true, 6)

	// The hot window ends at 1 s: the primary admits, and charges every bucket. (The
	// primary counts whole microseconds: a microsecond before, the answers still agree.)
	r.clock.Advance(750*time.Millisecond - time.Microsecond)
	mr = step("a microsecond before", true, 6)
	require.Equal(t, time.Microsecond, mr.Results[mr.Binding].RetryAfter)
	r.clock.Advance(time.Microsecond)
	mr = step("a new window for hot and a", false, 7)
	require.True(t, mr.Allowed)
	// b: the refund gave its first charge back
	require.Equal(t, []int{0, 9, 199, 0}, remainings(mr))

	// A reset of hot through the Limiter: the list is admitted again.
	step("denied", false, 8)
	step("remembered", true, 8)
	for _, l := range []*fallback.Limiter{r.twin, r.l} {
		require.NoError(t, ins(l).Reset(ctx, "hot", hotWindow))
	}
	mr = step("hot reset: admitted", false, 9)
	require.True(t, mr.Allowed)

	// The same list with a cost the primary refuses is refused, by the primary, not denied.
	step("denied", false, 10)
	step("remembered", true, 10)
	bad := hotList()
	bad[0].N = -1
	_, _, err := r.l.AllowAllOrigin(ctx, bad)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	require.Equal(t, int64(11), r.primary.calls.Load())
}

// remainings returns the Remaining of each Result of mr.
func remainings(mr ratelimit.MultiResult) []int {
	out := make([]int, len(mr.Results))
	for i, res := range mr.Results {
		out[i] = res.Remaining
	}
	return out
}

// TestDenialCacheAllowAllChangesNoAnswer: over a long irregular timeline of lists (three
// lists of fixed windows sharing buckets, at two priorities), charges of single buckets,
// refunds and resets, the Limiter with its cache answers exactly as its twin without one,
// and the cache answers a good share of the denied lists.
func TestDenialCacheAllowAllChangesNoAnswer(t *testing.T) {
	r := newListRig(t)
	bg := context.Background()
	ctxs := []context.Context{bg, priority.With(bg, priority.Normal)}
	hot := ratelimit.Limit{Rate: 4, Burst: 2, Algorithm: ratelimit.FixedWindow}    // 500 ms
	warm := ratelimit.Limit{Rate: 20, Burst: 30, Algorithm: ratelimit.FixedWindow} // 1.5 s
	cool := ratelimit.Limit{Rate: 50, Burst: 200, Algorithm: ratelimit.FixedWindow}
	lists := [][]ratelimit.Request{
		{{Key: "hot", Limit: hot}, {Key: "warm", Limit: warm}, {Key: "cool", Limit: cool}},
		{{Key: "warm", Limit: warm}, {Key: "hot", Limit: hot}, {Key: "z"}},
		{{Key: "cool", Limit: cool}, {Key: "warm", Limit: warm, N: 2}},
	}
	rng := uint32(11)
	next := func(bound uint32) uint32 { // xorshift: deterministic
		rng ^= rng << 13
		rng ^= rng >> 17
		rng ^= rng << 5
		return rng % bound
	}
	var charge ratelimit.Charge // of the last list admitted
	denied, cached := 0, 0
	for range 5000 {
		r.clock.Advance(time.Duration(next(40)) * time.Millisecond)
		ctx := ctxs[next(2)]
		switch op := next(20); {
		case op == 0:
			r.allowN(t, ctx, "warm", warm, 1)
		case op == 1 && !charge.At.IsZero():
			for _, l := range []*fallback.Limiter{r.twin, r.l} {
				_, err := ins(l).Refund(ctx, "cool", cool, 1, charge)
				require.NoError(t, err)
			}
		case op == 2:
			for _, l := range []*fallback.Limiter{r.twin, r.l} {
				require.NoError(t, ins(l).Reset(ctx, "hot", hot))
			}
		default:
			list := lists[next(3)]
			mr, fromCache := r.all(t, ctx, list)
			switch {
			case mr.Allowed && list[0].Key == "hot":
				charge = mr.Results[2].Charge
			case !mr.Allowed:
				denied++
				if fromCache {
					cached++
				}
			}
		}
	}
	// Not every denial can be remembered (the third list's binding costs 2 when warm runs
	// out, and the first denial after each change goes to the primary): 948 of 3,126 here.
	t.Logf("%d lists denied, %d by the cache", denied, cached)
	require.Greater(t, cached, denied/4)
}
