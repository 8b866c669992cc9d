package ratelimittest

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// The rules of limits that name their algorithm (ratelimit.Limit.Algorithm): one limiter,
// whatever its default, serves limits of every algorithm it implements, each its own
// bucket. Run runs them for every default algorithm.

var mixedRules = []rule{
	{"DefaultNamedIsDefault", mixedDefaultNamed},
	{"OneKeyTwoAlgorithms", mixedTwoBuckets},
	{"EachByItsOwn", mixedEachByItsOwn},
}

var mixedMultiRules = []rule{
	{"AllowAllMixed", mixedAllowAll},
	{"AllowAllDefaultTwice", mixedAllowAllTwice},
}

// other returns an algorithm of h's other than h's default, preferring the sliding log, or
// DefaultAlgorithm when h implements only one.
func other(h harness) ratelimit.Algorithm {
	for _, a := range []ratelimit.Algorithm{ratelimit.SlidingWindowLog, ratelimit.TokenBucket} {
		if a != h.Algorithm && slices.Contains(h.Algorithms, a) {
			return a
		}
	}
	for _, a := range h.Algorithms {
		if a != h.Algorithm {
			return a
		}
	}
	return ratelimit.DefaultAlgorithm
}

// named returns limit naming a.
func named(limit ratelimit.Limit, a ratelimit.Algorithm) ratelimit.Limit {
	limit.Algorithm = a
	return limit
}

// mixedDefaultNamed: a limit naming the limiter's default algorithm and the same limit
// naming none are one bucket, the same policy: two tokens taken under one leave none under
// the other. Each Result carries the limit as it was given.
func mixedDefaultNamed(t testing.TB, h harness) {
	ctx := context.Background()
	implicit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 2}
	explicit := named(implicit, h.Algorithm)
	res, err := h.Limiter.AllowN(ctx, "k", implicit, 2)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	assert.Equal(t, implicit, res.Limit)
	res, err = h.Limiter.Allow(ctx, "k", explicit)
	require.NoError(t, err)
	assert.False(t, res.Allowed, "the default named is the default: one bucket, drained")
	assert.Equal(t, explicit, res.Limit)

	// And the other way round, on another key.
	res, err = h.Limiter.AllowN(ctx, "j", explicit, 2)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	res, err = h.Limiter.Allow(ctx, "j", implicit)
	require.NoError(t, err)
	assert.False(t, res.Allowed)
}

// mixedTwoBuckets: one key under one limit and two algorithms is two buckets: draining the
// default's leaves the other's full, and the other way round.
func mixedTwoBuckets(t testing.TB, h harness) {
	alt := other(h)
	if alt == ratelimit.DefaultAlgorithm {
		return // a limiter of one algorithm
	}
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 2}
	for _, first := range []ratelimit.Limit{limit, named(limit, alt)} {
		key := "k" + first.Algorithm.String()
		res, err := h.Limiter.AllowN(ctx, key, first, 2)
		require.NoError(t, err)
		require.True(t, res.Allowed)
		second := named(limit, alt)
		if first.Algorithm == alt {
			second = limit
		}
		res, err = h.Limiter.AllowN(ctx, key, second, 2)
		require.NoError(t, err)
		assert.True(t, res.Allowed, "%v after %v: another bucket, full", second.Algorithm, first.Algorithm)
	}
}

// mixedEachByItsOwn: a limit naming the sliding log on a limiter of another default is
// enforced as a sliding log, and one naming the token bucket as a token bucket: Rate 2,
// Burst 2, two tokens at once, then 500 ms later the token bucket has one again (2/s) where
// the sliding log has none until its window of 1 s has passed.
func mixedEachByItsOwn(t testing.TB, h harness) {
	if !slices.Contains(h.Algorithms, ratelimit.SlidingWindowLog) || !slices.Contains(h.Algorithms, ratelimit.TokenBucket) {
		return
	}
	ctx := context.Background()
	base := ratelimit.Limit{Rate: 2, Burst: 2}
	log, tokens := named(base, ratelimit.SlidingWindowLog), named(base, ratelimit.TokenBucket)
	for _, l := range []ratelimit.Limit{log, tokens} {
		res, err := h.Limiter.AllowN(ctx, "k", l, 2)
		require.NoError(t, err)
		require.True(t, res.Allowed, l.Algorithm)
	}
	h.Advance(500 * ms)
	res, err := h.Limiter.Allow(ctx, "k", tokens)
	require.NoError(t, err)
	assert.True(t, res.Allowed, "the token bucket refilled one token in 500 ms")
	res, err = h.Limiter.Allow(ctx, "k", log)
	require.NoError(t, err)
	assert.False(t, res.Allowed, "the sliding log holds both entries until its window passes")
	assert.Equal(t, 500*ms, res.RetryAfter)
	h.Advance(500 * ms)
	res, err = h.Limiter.Allow(ctx, "k", log)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
}

// mixedAllowAll: one AllowAll over a token bucket, a sliding log and a fixed window of one
// key, all or nothing. The drained sliding log denies the call and the others keep every
// token; once its window has passed, all three are charged, and Refund and Reset reach
// each one's bucket.
func mixedAllowAll(t testing.TB, h harness) {
	for _, a := range []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.SlidingWindowLog, ratelimit.FixedWindow} {
		if !slices.Contains(h.Algorithms, a) {
			return
		}
	}
	ctx := context.Background()
	tb := ratelimit.Limit{Rate: 1.0 / 60, Burst: 3, Algorithm: ratelimit.TokenBucket}
	swl := ratelimit.Limit{Rate: 2, Burst: 2, Algorithm: ratelimit.SlidingWindowLog} // W = 1 s
	fw := ratelimit.Limit{Rate: 1.0 / 60, Burst: 3, Algorithm: ratelimit.FixedWindow}
	reqs := []ratelimit.Request{
		{Key: "u", Limit: tb, Name: "tb"}, {Key: "u", Limit: swl, Name: "swl"}, {Key: "u", Limit: fw, Name: "fw"},
	}
	res, err := h.Limiter.AllowN(ctx, "u", swl, 2)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	for range 2 {
		mr := allowAll(t, h, reqs...)
		require.False(t, mr.Allowed)
		assert.Equal(t, 1, mr.Binding, "the sliding log denies")
		assert.Equal(t, 2, mr.Results[0].Remaining, "what AllowN alone would leave")
		assert.Equal(t, 2, mr.Results[2].Remaining, "what AllowN alone would leave")
	}
	h.Advance(1000 * ms) // the log's entries leave its window; the others gain nothing whole
	mr := allowAll(t, h, reqs...)
	require.True(t, mr.Allowed, "%+v", mr)
	assert.Equal(t, []int{2, 1, 2}, []int{mr.Results[0].Remaining, mr.Results[1].Remaining, mr.Results[2].Remaining})

	// All three were charged once: AllowN of what each has left passes, one more does not.
	ins, ok := ratelimit.As[ratelimit.Inspector](h.Limiter)
	if !ok {
		return
	}
	for i, r := range reqs {
		res := peek(t, h, "u", r.Limit, mr.Results[i].Remaining)
		assert.True(t, res.Allowed, r.Name)
		res = peek(t, h, "u", r.Limit, mr.Results[i].Remaining+1)
		assert.False(t, res.Allowed, r.Name)
	}
	res, err = ins.Refund(ctx, "u", swl, 1, mr.Results[1].Charge)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Remaining, "the log's entry given back: one token would leave 1")
	require.NoError(t, ins.Reset(ctx, "u", fw))
	assert.Equal(t, 2, peek(t, h, "u", fw, 1).Remaining, "the fixed window full again")
	assert.Equal(t, 1, peek(t, h, "u", tb, 1).Remaining, "the token bucket untouched")
}

// mixedAllowAllTwice: the same key under a limit naming the limiter's default and the same
// limit naming none is one bucket twice in one AllowAll: refused as the same key and limit
// twice would be.
func mixedAllowAllTwice(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	ml := capability[ratelimit.MultiLimiter](h.Limiter)
	mr, err := ml.AllowAll(context.Background(), []ratelimit.Request{
		{Key: "k", Limit: limit, Name: "implicit"}, {Key: "k", Limit: named(limit, h.Algorithm), Name: "explicit"},
	})
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
	assert.False(t, mr.Allowed)
	assert.Equal(t, 1, mr.Binding)
	if _, ok := ratelimit.As[ratelimit.Inspector](h.Limiter); ok {
		assert.Equal(t, 1, peek(t, h, "k", limit, 1).Remaining, "nothing taken")
	}
}
