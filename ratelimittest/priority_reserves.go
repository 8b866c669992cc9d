package ratelimittest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/priority"
)

// The rules of the reserves' arithmetic: what each priority may take of a bucket.

// priorityExceedsBurst: n above the burst left to a priority can never pass at it: an error
// wrapping ErrExceedsBurst, which takes nothing and names no key.
func priorityExceedsBurst(t testing.TB, h harness) {
	const key = "user:secret-42"
	cases := []struct {
		p priority.Level
		n int
	}{{sheddable, 6}, {sheddable, 10}, {normal, 10}}
	for _, c := range cases {
		ctx := priority.With(context.Background(), c.p)
		res, err := h.Limiter.AllowN(ctx, key, ten, c.n)
		require.ErrorIs(t, err, ratelimit.ErrExceedsBurst, "%v n=%d", c.p, c.n)
		assert.NotContains(t, err.Error(), "secret", "the error names the key")
		assert.Equal(t, ratelimit.Result{Limit: ten}, res)
		if ins, ok := ratelimit.As[ratelimit.Inspector](h.Limiter); ok {
			_, err = ins.Peek(ctx, key, ten, c.n)
			require.ErrorIs(t, err, ratelimit.ErrExceedsBurst, "Peek %v n=%d", c.p, c.n)
		}
		if ml, ok := ratelimit.As[ratelimit.MultiLimiter](h.Limiter); ok {
			mr, err := ml.AllowAll(ctx, []ratelimit.Request{
				{Key: "other", Limit: ten, N: 1, Name: "fits"},
				{Key: key, Limit: ten, N: c.n, Name: "too big"},
			})
			require.ErrorIs(t, err, ratelimit.ErrExceedsBurst, "AllowAll %v n=%d", c.p, c.n)
			assert.NotContains(t, err.Error(), "secret")
			assert.False(t, mr.Allowed)
			assert.Equal(t, 1, mr.Binding)
		}
	}
	// The largest requests that fit: Sheddable 5 and Normal 9 tokens of a fresh bucket.
	playOutcomes(t, h.Limiter, "fit-s", ten, []outcome{{p: sheddable, n: 5, allowed: true}})
	playOutcomes(t, h.Limiter, "fit-n", ten, []outcome{{p: normal, n: 9, allowed: true}})
	// Nothing was taken by the errors: Critical takes the whole bucket.
	playOutcomes(t, h.Limiter, key, ten, []outcome{{p: critical, n: 10, allowed: true}})
	playOutcomes(t, h.Limiter, "other", ten, []outcome{{p: critical, n: 10, allowed: true}})
}

// priorityDenialTakesNothing: a bucket drained to the Sheddable reserve denies ten
// Sheddable requests, and still holds exactly its five tokens for the others.
func priorityDenialTakesNothing(t testing.TB, h harness) {
	steps := []outcome{{p: critical, n: 5, allowed: true, remaining: 5}}
	steps = append(steps, repeat(sheddable, 10, false, 0)...)
	steps = append(steps, repeat(normal, 4, true, 3)...)
	steps = append(steps, outcome{p: normal})
	steps = append(steps, outcome{p: sheddable})
	steps = append(steps, outcome{p: critical, allowed: true})
	steps = append(steps, outcome{p: critical})
	playOutcomes(t, h.Limiter, "deny", ten, steps)
}

// priorityCriticalIsDefault: a context that carries no priority is Critical: it takes the
// bucket to empty, as AllowN always has.
func priorityCriticalIsDefault(t testing.TB, h harness) {
	ctx := context.Background()
	for i := range 10 {
		c := ctx
		if i%2 == 1 {
			c = priority.With(ctx, priority.Critical)
		}
		res, err := h.Limiter.Allow(c, "default", ten)
		require.NoError(t, err)
		require.True(t, res.Allowed, "request %d", i)
		require.Equal(t, 9-i, res.Remaining, "request %d", i)
	}
	res, err := h.Limiter.Allow(ctx, "default", ten)
	require.NoError(t, err)
	require.False(t, res.Allowed)
}

// priorityCustomReserves: Normal 0.2 and Sheddable 0.7 keep ⌊2⌋ and ⌊7⌋ tokens of 10
// back: three Sheddable pass, then five Normal, then two Critical.
func priorityCustomReserves(t testing.TB, h harness) {
	l := h.Reserves(priority.Reserves{Normal: 0.2, Sheddable: 0.7})
	steps := repeat(sheddable, 3, true, 2)
	steps = append(steps, outcome{p: sheddable})
	steps = append(steps, repeat(normal, 5, true, 4)...)
	steps = append(steps, outcome{p: normal}, outcome{p: sheddable})
	steps = append(steps, repeat(critical, 2, true, 1)...)
	steps = append(steps, outcome{p: critical})
	playOutcomes(t, l, "custom", ten, steps)

	// Sheddable 7 keeps 7 back: its largest request is 3 tokens.
	_, err := l.AllowN(priority.With(context.Background(), sheddable), "custom-n", ten, 4)
	require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
	playOutcomes(t, l, "custom-n", ten, []outcome{{p: sheddable, n: 3, allowed: true}})
}

// priorityReservesOff: a negative reserve keeps nothing back; the other keeps its default.
func priorityReservesOff(t testing.TB, h harness) {
	off := h.Reserves(priority.Reserves{Normal: -1, Sheddable: -1})
	playOutcomes(t, off, "off", ten, append(repeat(sheddable, 10, true, 9), outcome{p: sheddable}))
	playOutcomes(t, off, "off-n", ten, []outcome{{p: sheddable, n: 10, allowed: true}})

	normalOff := h.Reserves(priority.Reserves{Normal: -1})
	steps := repeat(sheddable, 5, true, 4)
	steps = append(steps, outcome{p: sheddable})
	steps = append(steps, repeat(normal, 5, true, 4)...)
	steps = append(steps, outcome{p: normal}, outcome{p: critical})
	playOutcomes(t, normalOff, "normal-off", ten, steps)
}

// prioritySmallBursts: reserves are whole tokens, rounded down. Burst 3 keeps ⌊0.3⌋ = 0
// back from Normal and ⌊1.5⌋ = 1 from Sheddable; Burst 1 keeps nothing back.
func prioritySmallBursts(t testing.TB, h harness) {
	three := ratelimit.Limit{Rate: 1, Burst: 3}
	playOutcomes(t, h.Limiter, "three", three, []outcome{
		{p: sheddable, allowed: true, remaining: 1},
		{p: sheddable, allowed: true, remaining: 0},
		{p: sheddable},
		{p: normal, allowed: true, remaining: 0},
		{p: normal},
		{p: critical},
	})
	one := ratelimit.Limit{Rate: 1, Burst: 1}
	playOutcomes(t, h.Limiter, "one", one, []outcome{
		{p: sheddable, allowed: true, remaining: 0},
		{p: sheddable},
		{p: critical},
	})
}

// priorityHugeBurst: at Burst = args.MaxBurst (2^52) the reserves are exact too: the
// default ones are ⌊0.1 × 2^52⌋ = 450,359,962,737,049 and 2^51 tokens, and the three
// priorities take, in turn, exactly the 2^52 tokens of the bucket, each down to its reserve.
// The sliding log refuses such a Burst (args.MaxLogBurst): its part is the rest of the
// suite's.
func priorityHugeBurst(t testing.TB, h harness) {
	if h.Algorithm == ratelimit.SlidingWindowLog {
		return
	}
	const huge = args.MaxBurst
	limit := ratelimit.Limit{Rate: 1e6, Burst: huge} // T = 1 µs, W = 2^52 µs
	rn := priority.Reserves{}.Tokens(normal, huge)
	require.Equal(t, 450_359_962_737_049, rn)
	require.Equal(t, huge/2, priority.Reserves{}.Tokens(sheddable, huge))
	playOutcomes(t, h.Limiter, "huge", limit, []outcome{
		{p: sheddable, n: huge / 2, allowed: true},
		{p: sheddable},
		{p: normal, n: huge/2 - rn + 1, remaining: huge/2 - rn}, // one token too many
		{p: normal, n: huge/2 - rn, allowed: true},
		{p: normal},
		{p: critical, n: rn + 1, remaining: rn},
		{p: critical, n: rn, allowed: true},
		{p: critical},
	})
	_, err := h.Limiter.AllowN(priority.With(context.Background(), sheddable), "huge", limit, huge/2+1)
	require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
}
