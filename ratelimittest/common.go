package ratelimittest

// The rules every algorithm obeys, and the helpers the rules of each algorithm share.

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// rule is one named check, run on a fresh harness. A rule makes no subtests of its own, so
// that it can run in a testing/synctest bubble, and under Check.
type rule struct {
	name string
	run  func(t testing.TB, h harness)
}

// common are the rules every algorithm obeys.
var common = []rule{
	{"InvalidInput", invalidInput},
	{"Concurrency", concurrency},
	{"AnyKey", anyKey},
	{"HugeBurst", hugeBurst},
	{"Wait", wait},
	{"Close", closeRule},
}

// clockFree are the rules that hold whatever the limiter's clock does meanwhile: all that
// Run checks of a limiter on a clock it cannot move (ClockUncontrolled).
var clockFree = []rule{
	{"InvalidInput", invalidInput},
	{"AnyKey", anyKey},
	{"Wait", wait},
	{"Close", closeRule},
}

// Algorithms lists the algorithms the suite has rules for: every algorithm of the ratelimit
// package.
func Algorithms() []ratelimit.Algorithm {
	var all []ratelimit.Algorithm
	for a := ratelimit.TokenBucket; a <= ratelimit.LeakyBucket; a++ {
		if rulesOf(a) != nil {
			all = append(all, a)
		}
	}
	return all
}

// rulesOf returns the rules of one algorithm, besides the common ones. Each algorithm's
// rules live in a file of their own.
func rulesOf(a ratelimit.Algorithm) []rule {
	switch a {
	case ratelimit.TokenBucket:
		return tokenBucketRules
	case ratelimit.FixedWindow:
		return fixedWindowRules
	case ratelimit.SlidingWindowLog:
		return slidingLogRules
	case ratelimit.SlidingWindowCounter:
		return slidingCounterRules
	case ratelimit.LeakyBucket:
		return leakyBucketRules
	}
	return nil
}

// step is one moment of a timeline: move the clock, ask for n tokens (1 if n is 0), and
// expect a result (its Limit field is filled in by play).
type step struct {
	advance time.Duration
	n       int
	want    ratelimit.Result
}

// play runs steps in order against one bucket and checks every result exactly.
func play(t testing.TB, h harness, key string, limit ratelimit.Limit, steps []step) {
	t.Helper()
	for i, s := range steps {
		h.Advance(s.advance)
		n := max(s.n, 1)
		got, err := h.Limiter.AllowN(context.Background(), key, limit, n)
		require.NoError(t, err, "step %d", i)
		want := s.want
		want.Limit = limit
		require.Equal(t, want, uncharged(t, got), "step %d (n=%d)", i, n)
	}
}

// uncharged checks that res carries a Charge exactly when it was allowed (its instant is
// checked by the charge rules), and returns res without it, to compare with a Result
// written out in a timeline.
func uncharged(t testing.TB, res ratelimit.Result) ratelimit.Result {
	t.Helper()
	require.Equal(t, res.Allowed, !res.Charge.At.IsZero(), "a Charge on every admission, and only there: %+v", res)
	res.Charge = ratelimit.Charge{}
	return res
}

func allowed(remaining int, resetAfter time.Duration) ratelimit.Result {
	return ratelimit.Result{Allowed: true, Remaining: remaining, ResetAfter: resetAfter}
}

func denied(remaining int, retryAfter, resetAfter time.Duration) ratelimit.Result {
	return ratelimit.Result{Remaining: remaining, RetryAfter: retryAfter, ResetAfter: resetAfter}
}

const ms = time.Millisecond

// invalidInput: every bad argument maps to its sentinel error, with Allowed false, and
// touches no bucket.
func invalidInput(t testing.TB, h harness) {
	ok := ratelimit.Limit{Rate: 1, Burst: 3}
	cases := []struct {
		name  string
		key   string
		limit ratelimit.Limit
		n     int
		want  error
	}{
		{"EmptyKey", "", ok, 1, ratelimit.ErrInvalidArgument},
		{"KeyTooLong", strings.Repeat("k", args.MaxKeyLen+1), ok, 1, ratelimit.ErrInvalidArgument},
		{"NaNRate", "bad", ratelimit.Limit{Rate: math.NaN(), Burst: 3}, 1, ratelimit.ErrInvalidArgument},
		{"PlusInfRate", "bad", ratelimit.Limit{Rate: math.Inf(1), Burst: 3}, 1, ratelimit.ErrInvalidArgument},
		{"MinusInfRate", "bad", ratelimit.Limit{Rate: math.Inf(-1), Burst: 3}, 1, ratelimit.ErrInvalidArgument},
		{"ZeroRate", "bad", ratelimit.Limit{Rate: 0, Burst: 3}, 1, ratelimit.ErrInvalidArgument},
		{"NegativeRate", "bad", ratelimit.Limit{Rate: -1, Burst: 3}, 1, ratelimit.ErrInvalidArgument},
		{"ZeroBurst", "bad", ratelimit.Limit{Rate: 1, Burst: 0}, 1, ratelimit.ErrInvalidArgument},
		{"NegativeBurst", "bad", ratelimit.Limit{Rate: 1, Burst: -1}, 1, ratelimit.ErrInvalidArgument},
		{"ZeroLimit", "bad", ratelimit.Limit{}, 1, ratelimit.ErrInvalidArgument},
		{"ZeroCost", "bad", ok, 0, ratelimit.ErrInvalidArgument},
		{"NegativeCost", "bad", ok, -1, ratelimit.ErrInvalidArgument},
		{"CostAboveBurst", "bad", ok, 4, ratelimit.ErrExceedsBurst},
	}
	ctx := context.Background()
	for _, c := range cases { // no subtests: a rule may run in a synctest bubble
		res, err := h.Limiter.AllowN(ctx, c.key, c.limit, c.n)
		require.ErrorIs(t, err, c.want, c.name)
		assert.False(t, res.Allowed, c.name)
		if c.n == 1 {
			res, err = h.Limiter.Allow(ctx, c.key, c.limit)
			require.ErrorIs(t, err, c.want, c.name)
			assert.False(t, res.Allowed, c.name)
		}
	}
	// None of the calls above took a token from the valid bucket "bad".
	res, err := h.Limiter.AllowN(ctx, "bad", ok, 3)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Zero(t, res.Remaining)
}

// concurrency: 64 goroutines hammer one bucket whose clock stands still; exactly Burst win.
func concurrency(t testing.TB, h harness) {
	const goroutines, attempts = 64, 8
	limit := ratelimit.Limit{Rate: 1, Burst: 100}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for range goroutines {
		wg.Go(func() {
			for range attempts {
				res, err := h.Limiter.Allow(context.Background(), "hot", limit)
				if err != nil {
					errs <- err
					return
				}
				if res.Allowed {
					admitted.Add(1)
				} else if res.RetryAfter <= 0 {
					errs <- errors.New("denied with no RetryAfter")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, int64(limit.Burst), admitted.Load())
}

// anyKey: any non-empty string of at most args.MaxKeyLen bytes is a key of its own,
// including ones that mean something to Redis (braces, colons), unicode, and the longest
// ones; a longer key is refused with ErrKeyTooLong.
func anyKey(t testing.TB, h harness) {
	long := strings.Repeat("k", args.MaxKeyLen)
	keys := []string{
		"a", "{a}", "{", "}", "a:b:c", "ratelimit:a", "über-ключ-鍵", " ", "\x00",
		long, long[1:] + "x",
	}
	limit := ratelimit.Limit{Rate: 1, Burst: 2}
	for round, remaining := range []int{1, 0} {
		for _, k := range keys {
			res, err := h.Limiter.Allow(context.Background(), k, limit)
			require.NoError(t, err)
			require.True(t, res.Allowed, "round %d, key %.20q", round, k)
			require.Equal(t, remaining, res.Remaining, "round %d, key %.20q", round, k)
		}
	}
	_, err := h.Limiter.Allow(context.Background(), long+"k", limit)
	require.ErrorIs(t, err, ratelimit.ErrInvalidArgument)
}

// wait covers the parts of Wait that need no time to pass: a backend's own tests cover
// blocking.
func wait(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 2} // a token an hour
	ctx := context.Background()
	if !h.CanWait {
		require.ErrorIs(t, h.Limiter.Wait(ctx, "wait", limit), ratelimit.ErrNotSupported)
		return
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, h.Limiter.Wait(canceled, "wait", limit), context.Canceled)
	require.ErrorIs(t, h.Limiter.Wait(ctx, "wait", ratelimit.Limit{}), ratelimit.ErrInvalidArgument)
	require.ErrorIs(t, h.Limiter.Wait(ctx, "", limit), ratelimit.ErrInvalidArgument)

	// The canceled Wait took nothing: the first Wait gets a token at once.
	require.NoError(t, h.Limiter.Wait(ctx, "wait", limit))
	res, err := h.Limiter.Allow(ctx, "wait", limit)
	require.NoError(t, err)
	require.True(t, res.Allowed)
	require.Zero(t, res.Remaining)

	// The next token is an hour away and the deadline ten seconds: fail at once.
	short, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err = h.Limiter.Wait(short, "wait", limit)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, short.Err(), "Wait waited for a deadline it knew it would miss")
}

// closeRule: after Close every call fails with ErrClosed, and Close can be called again.
func closeRule(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 1, Burst: 1}
	ctx := context.Background()
	require.NoError(t, h.Limiter.Close())
	_, err := h.Limiter.Allow(ctx, "closed", limit)
	require.ErrorIs(t, err, ratelimit.ErrClosed)
	_, err = h.Limiter.AllowN(ctx, "closed", limit, 1)
	require.ErrorIs(t, err, ratelimit.ErrClosed)
	require.ErrorIs(t, h.Limiter.Wait(ctx, "closed", limit), ratelimit.ErrClosed)
	require.NoError(t, h.Limiter.Close())
}

// capability returns l's capability T, found with ratelimit.As as middleware finds it, for
// the rules that run only when l has it; the zero T (a nil interface) when it has none.
func capability[T any](l ratelimit.Limiter) T {
	c, _ := ratelimit.As[T](l)
	return c
}
