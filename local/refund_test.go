package local

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// TestSlidingLogRefundAtInstant drives the ring of a sliding log through random admissions
// and refunds at a charge instant, wrapping it many times, against a plain slice of the
// times it must hold: a refund at at drops up to n entries recorded at at while they are in
// the window, and keeps every other entry, in order.
func TestSlidingLogRefundAtInstant(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 3))
	limit := ratelimit.Limit{Rate: 1, Burst: 7} // W = 7 s
	const w = 7_000_000
	sl := &slidingLog{window: w}
	var want, charges []int64
	u := int64(1_000_000_000)
	for i := range 5000 {
		u += rng.Int64N(1_500_000)
		if rng.IntN(3) == 0 && len(charges) > 0 {
			at := charges[rng.IntN(len(charges))]
			n := 1 + rng.IntN(3)
			sl.refund(limit, u, at, n)
			if at > u-w {
				for j := 0; j < len(want) && n > 0; {
					if want[j] == at {
						want = slices.Delete(want, j, j+1)
						n--
						continue
					}
					j++
				}
			}
		} else {
			n := 1 + rng.IntN(3)
			v, _ := sl.take(limit, u, n, unbounded)
			want = slices.DeleteFunc(want, func(e int64) bool { return e <= u-w })
			if v.allowed {
				for range n {
					want = append(want, u)
				}
				charges = append(charges, u)
			}
		}
		got := make([]int64, 0, sl.n)
		for j := range sl.n {
			got = append(got, sl.at(j))
		}
		// The log trims what has left the window only when it next decides.
		got = slices.DeleteFunc(got, func(e int64) bool { return e <= u-w })
		live := slices.DeleteFunc(slices.Clone(want), func(e int64) bool { return e <= u-w })
		require.Equal(t, live, got, "step %d at %d", i, u)
	}
}

// TestWindowRefunds: the fixed window and the sliding counter, on their locked states and on
// their packed words alike, give 2 tokens back to the window that held the charge, in every
// case of where it lies: W = 1000 µs, the refund at 3500 µs, in window 3.
func TestWindowRefunds(t *testing.T) {
	const w, u = 1000, 3500
	limit := ratelimit.Limit{Rate: 5000, Burst: 5} // 3 bits a count in a word
	cases := []struct {
		name           string
		index, at      int64 // the window the bucket last admitted in; the charge
		cur, prev      int64
		fixed          int64 // the fixed window's count after
		curAft, prvAft int64 // the counter's counts after
	}{
		{"charged in the current window", 3, 3100, 4, 2, 2, 2, 2},
		{"operator's", 3, noCharge, 4, 2, 2, 2, 2},
		{"charged in the previous window, admitted since", 3, 2900, 4, 2, 4, 4, 0},
		{"charged in the previous window, nothing since", 2, 2900, 4, 2, 4, 2, 2},
		{"charged two windows ago", 3, 1900, 4, 2, 4, 4, 2},
		{"charged two windows ago, nothing since", 1, 1900, 4, 2, 4, 4, 2},
		{"operator's, nothing since", 2, noCharge, 4, 2, 4, 4, 2},
		{"not below zero", 3, 2900, 4, 1, 4, 4, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.fixed, fixedRefund(c.index, c.cur, u, c.at, w, 2))
			word := fixedWordRefund(uint64(c.index)<<3|uint64(c.cur), limit, u, c.at, w, 2)
			require.Equal(t, uint64(c.index)<<3|uint64(c.fixed), word)

			cur, prev := counterRefund(c.index, c.cur, c.prev, u, c.at, w, 2)
			require.Equal(t, [2]int64{c.curAft, c.prvAft}, [2]int64{cur, prev})
			word = counterWordRefund(uint64(c.index)<<6|uint64(c.prev)<<3|uint64(c.cur), limit, u, c.at, w, 2)
			require.Equal(t, uint64(c.index)<<6|uint64(c.prvAft)<<3|uint64(c.curAft), word)
		})
	}
}
