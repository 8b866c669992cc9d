package local

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// leastRetry finds by bisection the least d ≥ 1 µs at which the counter admits n, denied at
// x µs into the current window with counts prev and cur: the definition counterRetry
// implements in closed form. The window k after the current one sees counts (prev, cur),
// (cur, 0), (0, 0).
func leastRetry(prev, cur, w, x, burst, n int64) int64 {
	admits := func(d int64) bool {
		k, y := (x+d)/w, (x+d)%w
		p, c := prev, cur
		for range k {
			p, c = c, 0
		}
		return estimate(p, c, w, y) <= float64(burst-n)
	}
	lo, hi := int64(1), 2*w-x
	for lo < hi {
		mid := lo + (hi-lo)/2
		if admits(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// TestCounterRetryIsLeast compares counterRetry with the bisection on random denials, at
// windows from 1 µs to 2⁵³ µs and bursts up to 2³⁰. Up to windows of 2⁴⁶ µs (2.2 years) the
// closed-form guess is at most 1 µs off, the steps around it correct it, and the answer is
// exactly the least. Beyond, float64 rounding can move the guess further than the steps go:
// the answer must still admit, and come at most W/2⁴⁰ after the least (4 ms at 2⁵² µs, 142
// years), or be the start of window 2.
func TestCounterRetryIsLeast(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases, corrected := 0, 0
	for cases < 100_000 {
		w := 1 + rng.Int64N(int64(1)<<(1+rng.IntN(53)))
		burst := 1 + rng.Int64N(int64(1)<<rng.IntN(31))
		prev, cur := rng.Int64N(burst+1), rng.Int64N(burst+1)
		n := 1 + rng.Int64N(burst)
		x := rng.Int64N(w)
		if estimate(prev, cur, w, x) <= float64(burst-n) {
			continue // admitted: no RetryAfter
		}
		cases++
		got, least := counterRetry(prev, cur, w, x, burst, n), leastRetry(prev, cur, w, x, burst, n)
		if w <= 1<<46 {
			require.Equal(t, least, got, "w=%d burst=%d prev=%d cur=%d x=%d n=%d", w, burst, prev, cur, x, n)
		} else if got != least {
			corrected++
			require.Greater(t, got, least, "w=%d burst=%d prev=%d cur=%d x=%d n=%d", w, burst, prev, cur, x, n)
			require.True(t, got-least <= w>>40 || got == 2*w-x,
				"w=%d burst=%d prev=%d cur=%d x=%d n=%d: %d, least %d", w, burst, prev, cur, x, n, got, least)
		}
	}
	t.Logf("%d denials; beyond 2^46 µs, %d answers later than the least", cases, corrected)
}

// TestCounterRetryCases: hand-made denials, with the arithmetic in the comments.
func TestCounterRetryCases(t *testing.T) {
	cases := []struct {
		name                         string
		prev, cur, w, x, burst, n, d int64
	}{
		// Burst 10, W = 10 s, 2.5 s in, prev 8, cur 4: 8·(10 − y)/10 ≤ 5 from y = 3.75 s.
		{"ThisWindow", 8, 4, 10_000_000, 2_500_000, 10, 1, 1_250_000},
		// cur 10 = Burst: next window, 10·(10 − y)/10 ≤ 9 from y = 1 s; now is 9.999 s.
		{"NextWindow", 0, 10, 10_000_000, 9_999_000, 10, 1, 1_001_000},
		// cur = Burst = n: est must be 0, at the start of the window after next.
		{"WindowAfterNext", 3, 5, 5_000_000, 0, 5, 5, 10_000_000},
		// W = 3 µs, 2 µs in, prev 3, cur 0, n 3: est + 3 ≤ 3 needs est 0: the next window's
		// start (cur 0 carries nothing), 1 µs away.
		{"TinyWindow", 3, 0, 3, 2, 3, 3, 1},
		// 3·(5 − y)/5 + 3 ≤ 5 at y = 5/3 s in the next window: the first whole µs admitted,
		// 1,666,667, gives est 4.9999998.
		{"Thirds", 0, 3, 5_000_000, 0, 5, 3, 6_666_667},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.d, leastRetry(c.prev, c.cur, c.w, c.x, c.burst, c.n), "the bisection")
			require.Equal(t, c.d, counterRetry(c.prev, c.cur, c.w, c.x, c.burst, c.n))
		})
	}
}
