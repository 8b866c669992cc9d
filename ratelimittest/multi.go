package ratelimittest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// The rules of ratelimit.MultiLimiter and ratelimit.Inspector, for every algorithm: Run
// runs them on the limiters that implement them.

var multiRules = []rule{
	{"SecondAndMinute", multiSecondAndMinute},
	{"AllOrNothing", multiAllOrNothing},
	{"BadInput", multiBadInput},
	{"ZeroLimitSkipped", multiZeroLimitSkipped},
	{"BindingTies", multiBindingTies},
	{"Concurrency", multiConcurrency},
}

var inspectorRules = []rule{
	{"PeekWritesNothing", peekWritesNothing},
	{"PeekIsAllowN", peekIsAllowN},
	{"RefundGivesBack", refundGivesBack},
	{"RefundNeverBeyondFull", refundNeverBeyondFull},
	{"RefundMissingBucket", refundMissingBucket},
	{"Reset", resetRule},
}

func allowAll(t testing.TB, h harness, reqs ...ratelimit.Request) ratelimit.MultiResult {
	t.Helper()
	mr, err := capability[ratelimit.MultiLimiter](h.Limiter).AllowAll(context.Background(), reqs)
	require.NoError(t, err)
	require.Len(t, mr.Results, len(reqs))
	return mr
}

func peek(t testing.TB, h harness, key string, limit ratelimit.Limit, n int) ratelimit.Result {
	t.Helper()
	res, err := capability[ratelimit.Inspector](h.Limiter).Peek(context.Background(), key, limit, n)
	require.NoError(t, err)
	return res
}

// multiSecondAndMinute: 2 a second and 5 a minute on one key, ten requests at once. Two
// are allowed, the second leaving 3 in the per-minute bucket; the other eight are denied by
// the per-second limit, each Result saying what AllowN alone would have said, and take
// nothing: the per-minute bucket still holds 3 (Peek: AllowN would leave 2).
func multiSecondAndMinute(t testing.TB, h harness) {
	second := ratelimit.Request{Key: "user:42", Limit: ratelimit.PerSecond(2), Name: "second"}
	minute := ratelimit.Request{Key: "user:42", Limit: ratelimit.PerMinute(5), Name: "minute"}
	var allowed int
	for i := range 10 {
		mr := allowAll(t, h, second, minute)
		if mr.Allowed {
			allowed++
			assert.Zero(t, mr.Results[mr.Binding].RetryAfter)
			if i == 1 {
				assert.Equal(t, 3, mr.Results[1].Remaining, "the per-minute bucket after two")
				assert.Equal(t, 0, mr.Binding, "the per-second bucket has fewer left (0 < 3)")
			}
			continue
		}
		assert.False(t, mr.Results[0].Allowed)
		assert.True(t, mr.Results[1].Allowed, "AllowN alone would have allowed the per-minute one")
		assert.Equal(t, 2, mr.Results[1].Remaining)
		assert.Equal(t, 0, mr.Binding)
		assert.Positive(t, mr.Results[0].RetryAfter)
	}
	assert.Equal(t, 2, allowed)
	if _, ok := ratelimit.As[ratelimit.Inspector](h.Limiter); ok {
		assert.Equal(t, 2, peek(t, h, "user:42", ratelimit.PerMinute(5), 1).Remaining, "the denials took nothing")
	}
}

// multiAllOrNothing: when one bucket denies, none is charged: a drained bucket beside a
// full one, three times, leaves the full one full.
func multiAllOrNothing(t testing.TB, h harness) {
	drained := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 1}
	full := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 5}
	res, err := h.Limiter.Allow(context.Background(), "a", drained)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	for range 3 {
		mr := allowAll(t, h, ratelimit.Request{Key: "b", Limit: full}, ratelimit.Request{Key: "a", Limit: drained})
		require.False(t, mr.Allowed)
		assert.Equal(t, 1, mr.Binding)
		assert.Equal(t, 4, mr.Results[0].Remaining, "what AllowN alone would have left")
	}
	// Every token of the full bucket is still there.
	res, err = h.Limiter.AllowN(context.Background(), "b", full, 5)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
}

// multiBadInput: bad input is an error that names the entry by index and name, never by
// key, and takes nothing.
func multiBadInput(t testing.TB, h harness) {
	ml := capability[ratelimit.MultiLimiter](h.Limiter)
	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	good := ratelimit.Request{Key: "secret-user-7", Limit: limit, Name: "ok"}
	cases := []struct {
		name string
		reqs []ratelimit.Request
		want error
	}{
		{"Empty", nil, ratelimit.ErrInvalidArgument},
		{"EmptyKey", []ratelimit.Request{good, {Limit: limit, Name: "nokey"}}, ratelimit.ErrInvalidArgument},
		{"InvalidLimit", []ratelimit.Request{good, {Key: "secret-user-7", Limit: ratelimit.Limit{Rate: 1}, Name: "bad"}}, ratelimit.ErrInvalidArgument},
		{"NegativeCost", []ratelimit.Request{good, {Key: "secret-user-8", Limit: limit, N: -1, Name: "neg"}}, ratelimit.ErrInvalidArgument},
		{"Twice", []ratelimit.Request{good, good}, ratelimit.ErrInvalidArgument},
	}
	for _, tt := range cases { // no subtests: a rule may run in a synctest bubble
		mr, err := ml.AllowAll(context.Background(), tt.reqs)
		require.ErrorIs(t, err, tt.want, tt.name)
		assert.False(t, mr.Allowed, tt.name)
		assert.NotContains(t, err.Error(), "secret-user", tt.name)
		if len(tt.reqs) > 1 {
			assert.Contains(t, err.Error(), fmt.Sprintf("request 1 (%q)", tt.reqs[1].Name), tt.name)
		}
	}
	// N above Burst can never pass: ErrExceedsBurst, with Binding on that entry.
	mr, err := ml.AllowAll(context.Background(), []ratelimit.Request{good, {Key: "secret-user-9", Limit: limit, N: 3, Name: "big"}})
	require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
	assert.False(t, mr.Allowed)
	assert.Equal(t, 1, mr.Binding)
	// Nothing was taken by any of the above.
	res, err := h.Limiter.AllowN(context.Background(), "secret-user-7", limit, 2)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
}

// multiZeroLimitSkipped: an entry with the zero Limit is skipped, reported allowed, and is
// not Binding.
func multiZeroLimitSkipped(t testing.TB, h harness) {
	mr := allowAll(t, h, ratelimit.Request{Key: "k", Name: "none"},
		ratelimit.Request{Key: "k", Limit: ratelimit.Limit{Rate: 1, Burst: 3}, Name: "three"})
	require.True(t, mr.Allowed)
	assert.Equal(t, ratelimit.Result{Allowed: true}, mr.Results[0])
	assert.Equal(t, 1, mr.Binding)
	assert.Equal(t, 2, mr.Results[1].Remaining)
}

// multiBindingTies: when allowed, Binding is the entry with the fewest Remaining, the first
// of equals.
func multiBindingTies(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 4}
	mr := allowAll(t, h, ratelimit.Request{Key: "x", Limit: limit}, ratelimit.Request{Key: "y", Limit: limit},
		ratelimit.Request{Key: "z", Limit: limit, N: 2})
	require.True(t, mr.Allowed)
	assert.Equal(t, 2, mr.Binding, "z has 2 left, x and y 3")
	mr = allowAll(t, h, ratelimit.Request{Key: "x", Limit: limit}, ratelimit.Request{Key: "y", Limit: limit})
	require.True(t, mr.Allowed)
	assert.Equal(t, 0, mr.Binding, "x and y both have 2 left: the first")
}

// multiConcurrency: 64 goroutines decide {global 100, per user 10} over 20 users at once.
// No user gets more than 10, the total is exactly 100 (the users could take 200), and the
// buckets hold what the allowed requests took, no more: denials take nothing.
func multiConcurrency(t testing.TB, h harness) {
	const goroutines, attempts, users = 64, 8, 20
	global := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 100}
	perUser := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 10}
	var total atomic.Int64
	var byUser [users]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Go(func() {
			u := g % users
			for range attempts {
				mr, err := capability[ratelimit.MultiLimiter](h.Limiter).AllowAll(context.Background(), []ratelimit.Request{
					{Key: "global", Limit: global, Name: "global"},
					{Key: fmt.Sprintf("user:%d", u), Limit: perUser, Name: "user"},
				})
				if err != nil {
					errs <- err
					return
				}
				if mr.Allowed {
					total.Add(1)
					byUser[u].Add(1)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(100), total.Load())
	for u := range users {
		got := byUser[u].Load()
		require.LessOrEqual(t, got, int64(10), "user %d", u)
		// The user's bucket holds 10 - got tokens: exactly 10 - got can still be taken.
		if got < 10 {
			res, err := h.Limiter.AllowN(context.Background(), fmt.Sprintf("user:%d", u), perUser, int(10-got))
			require.NoError(t, err)
			require.True(t, res.Allowed, "user %d: %d allowed, the rest must still be there", u, got)
		}
		res, err := h.Limiter.Allow(context.Background(), fmt.Sprintf("user:%d", u), perUser)
		require.NoError(t, err)
		require.False(t, res.Allowed, "user %d: no more than 10 - %d were left", u, got)
	}
}

// peekWritesNothing: Peek answers what AllowN would, as often as asked, and a bucket it
// looked at is still new afterwards.
func peekWritesNothing(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 1, Burst: 3}
	for range 3 {
		res := peek(t, h, "k", limit, 2)
		assert.True(t, res.Allowed)
		assert.Equal(t, 1, res.Remaining)
	}
	res, err := h.Limiter.AllowN(context.Background(), "k", limit, 3)
	require.NoError(t, err)
	assert.True(t, res.Allowed, "the bucket is still full")
}

// peekIsAllowN: at any moment, Peek(n) is what AllowN(n) then answers.
func peekIsAllowN(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 10, Burst: 3}
	for i := range 12 {
		n := 1 + i%2
		want := peek(t, h, "k", limit, n)
		got, err := h.Limiter.AllowN(context.Background(), "k", limit, n)
		require.NoError(t, err)
		require.Equal(t, want, uncharged(t, got), "step %d", i)
		if i%3 == 2 {
			h.Advance(40 * time.Millisecond)
		}
	}
}

// refundGivesBack: tokens refunded can be taken again, and no more.
func refundGivesBack(t testing.TB, h harness) {
	ins := capability[ratelimit.Inspector](h.Limiter)
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 3}
	res, err := h.Limiter.AllowN(context.Background(), "k", limit, 3)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	_, err = ins.Refund(context.Background(), "k", limit, 2, res.Charge)
	require.NoError(t, err)
	res, err = h.Limiter.AllowN(context.Background(), "k", limit, 2)
	require.NoError(t, err)
	assert.True(t, res.Allowed, "two refunded")
	res, err = h.Limiter.Allow(context.Background(), "k", limit)
	require.NoError(t, err)
	assert.False(t, res.Allowed, "and no more")
}

// refundNeverBeyondFull: a refund larger than what was taken fills the bucket, no more.
func refundNeverBeyondFull(t testing.TB, h harness) {
	ins := capability[ratelimit.Inspector](h.Limiter)
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 5}
	res, err := h.Limiter.AllowN(context.Background(), "k", limit, 3)
	require.NoError(t, err)
	_, err = ins.Refund(context.Background(), "k", limit, 10, res.Charge)
	require.NoError(t, err)
	assert.Equal(t, 4, peek(t, h, "k", limit, 1).Remaining, "full: 5, less the one Peek asks about")
	res, err = h.Limiter.AllowN(context.Background(), "k", limit, 5)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
	res, err = h.Limiter.Allow(context.Background(), "k", limit)
	require.NoError(t, err)
	assert.False(t, res.Allowed)
}

// refundMissingBucket: refunding a bucket that does not exist does nothing.
func refundMissingBucket(t testing.TB, h harness) {
	ins := capability[ratelimit.Inspector](h.Limiter)
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 2}
	_, err := ins.Refund(context.Background(), "nobody", limit, 1, ratelimit.Charge{})
	require.NoError(t, err)
	res, err := h.Limiter.AllowN(context.Background(), "nobody", limit, 2)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
	res, err = h.Limiter.Allow(context.Background(), "nobody", limit)
	require.NoError(t, err)
	assert.False(t, res.Allowed, "the refund did not make the bucket hold more than Burst")
}

// resetRule: Reset makes a bucket full again.
func resetRule(t testing.TB, h harness) {
	ins := capability[ratelimit.Inspector](h.Limiter)
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 3}
	_, err := h.Limiter.AllowN(context.Background(), "k", limit, 3)
	require.NoError(t, err)
	require.NoError(t, ins.Reset(context.Background(), "k", limit))
	res, err := h.Limiter.AllowN(context.Background(), "k", limit, 3)
	require.NoError(t, err)
	assert.True(t, res.Allowed)
}
