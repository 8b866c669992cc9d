package ratelimittest

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/priority"
)

// windowArrival is one request of a timeline: the clock moves by Advance, then the request
// asks for N tokens at Priority (the harness's limiter has the default reserves).
type windowArrival struct {
	Advance  time.Duration
	N        int
	Priority priority.Level
}

// randomWindowArrivals returns count arrivals for limit, the same for the same seed: bursts
// (several requests at one instant), steady streams at gaps up to a quarter window, and now
// and then a pause of up to three windows; costs of 1 to 3 tokens, sometimes the whole
// Burst. Gaps are whole microseconds, rarely round ones.
func randomWindowArrivals(seed uint64, limit ratelimit.Limit, count int) []windowArrival {
	w, err := args.Window(limit)
	if err != nil {
		panic(err) // a test's own limit
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	arrivals := make([]windowArrival, count)
	for i := range arrivals {
		var gap int64
		switch r := rng.IntN(10); {
		case r < 3:
		case r < 8:
			gap = rng.Int64N(w/4 + 1)
		case r < 9:
			gap = rng.Int64N(w + 1)
		default:
			gap = rng.Int64N(3*w + 1)
		}
		n := 1 + rng.IntN(min(3, limit.Burst))
		if rng.IntN(20) == 0 {
			n = limit.Burst
		}
		arrivals[i] = windowArrival{Advance: time.Duration(gap) * time.Microsecond, N: n}
	}
	return arrivals
}

// modelLimits are the limits checkModelRule plays random timelines on: windows that are and
// are not round numbers of microseconds or divisors of the clock's start.
var modelLimits = []ratelimit.Limit{
	{Rate: 5, Burst: 8},       // W = 1.6 s
	{Rate: 3, Burst: 1},       // W = 333,333 µs
	{Rate: 0.1, Burst: 6},     // W = 60 s
	{Rate: 1000, Burst: 7},    // W = 7 ms
	{Rate: 7, Burst: 50},      // W = 7,142,857 µs
	{Rate: 1e6, Burst: 3},     // W = 3 µs
	{Rate: 1.0 / 7, Burst: 2}, // W = 14 s
}

// checkModelRule plays a random timeline on each of modelLimits, one after the other, each
// on a key of its own, against the reference model (see checkWindowModel).
func checkModelRule(t testing.TB, h harness) {
	now := NewClock().Now()
	advance := h.Advance
	h.Advance = func(d time.Duration) {
		advance(d)
		now = now.Add(d)
	}
	for i, limit := range modelLimits {
		admitted, denied := checkWindowModel(t, h, now, "model"+limit.String(), limit,
			randomWindowArrivals(uint64(i+1), limit, 300))
		// The timeline must exercise both outcomes to mean anything.
		require.Positive(t, admitted, "%v", limit)
		require.Positive(t, denied, "%v", limit)
	}
}

// checkWindowModel plays arrivals on the bucket (key, limit) of a harness built with
// ratelimit.FixedWindow or ratelimit.SlidingWindowCounter, and requires every Result to be
// exactly the reference model's. The model keeps every admission and derives each answer
// from the definitions: the counts of fixed windows aligned to the Unix epoch; est = count
// (fixed) or prev·(W − x)/W + cur (counter); RetryAfter the least whole microsecond at which
// the request would be admitted, found by bisection over the model itself; ResetAfter the
// time until the windows that counted anything stop weighing. It also checks, on the
// admissions, the bound each algorithm guarantees: never more than Burst in one fixed window
// (both), less than 2·Burst in any interval of length W (counter). After every third
// denial it comes back 1 µs before RetryAfter (still denied), then at RetryAfter (allowed).
// An arrival of a priority below Critical is decided by the model as under a Burst less its
// reserve (the default priority.Reserves); the bounds above are checked on the real Burst.
//
// now is the harness clock's reading, which must not move but by h.Advance; no other request
// may use the bucket meanwhile. It returns how many arrivals were admitted and denied at
// first asking.
func checkWindowModel(t testing.TB, h harness, now time.Time, key string, limit ratelimit.Limit,
	arrivals []windowArrival) (admitted, denied int) {
	t.Helper()
	w, err := args.Window(limit)
	require.NoError(t, err)
	require.Contains(t, []ratelimit.Algorithm{ratelimit.FixedWindow, ratelimit.SlidingWindowCounter}, h.Algorithm)
	m := &windowModel{counter: h.Algorithm == ratelimit.SlidingWindowCounter, burst: int64(limit.Burst), w: w,
		counts: map[int64]int64{}}
	u := now.UnixMicro()
	ctx := context.Background()
	ask := func(i int, a windowArrival) ratelimit.Result {
		t.Helper()
		n := a.N
		got, err := h.Limiter.AllowN(priority.With(ctx, a.Priority), key, limit, n)
		require.NoError(t, err, "arrival %d", i)
		want := m.decide(u, int64(n), int64(limit.Burst-priority.Reserves{}.Tokens(a.Priority, limit.Burst)))
		want.Limit = limit
		require.Equal(t, want, uncharged(t, got), "arrival %d: n=%d at %d µs, %v", i, n, u, a.Priority)
		require.Equal(t, got.Allowed, got.RetryAfter == 0, "arrival %d", i)
		require.True(t, 0 <= got.Remaining && got.Remaining <= limit.Burst, "arrival %d", i)
		if got.Allowed {
			m.admit(t, u, int64(n))
		}
		return got
	}
	advance := func(d time.Duration) {
		h.Advance(d)
		u += d.Microseconds()
	}
	for i, a := range arrivals {
		advance(a.Advance)
		res := ask(i, a)
		if res.Allowed {
			admitted++
			continue
		}
		if denied++; denied%3 != 0 {
			continue
		}
		if res.RetryAfter > time.Microsecond {
			advance(res.RetryAfter - time.Microsecond)
			require.False(t, ask(i, a).Allowed, "arrival %d: allowed 1 µs before RetryAfter", i)
			advance(time.Microsecond)
		} else {
			advance(res.RetryAfter)
		}
		require.True(t, ask(i, a).Allowed, "arrival %d: denied at RetryAfter", i)
	}
	return admitted, denied
}

// windowModel is the reference model of the two fixed-window algorithms: every admission
// kept, every answer derived from them.
type windowModel struct {
	counter  bool // SlidingWindowCounter; else FixedWindow
	burst, w int64
	counts   map[int64]int64 // tokens admitted in each fixed window, by index
	log      []admission
}

type admission struct{ at, n int64 }

// index is the fixed window holding the instant u (Unix µs, u ≥ 0).
func (m *windowModel) index(u int64) int64 { return u / m.w }

// span is how many windows an admission weighs in, its own included.
func (m *windowModel) span() int64 {
	if m.counter {
		return 2
	}
	return 1
}

// estimate is what the algorithm counts against Burst at u.
func (m *windowModel) estimate(u int64) float64 {
	i := m.index(u)
	if !m.counter {
		return float64(m.counts[i])
	}
	x := u - i*m.w
	return float64(float64(m.counts[i-1])*float64(m.w-x)/float64(m.w)) + float64(m.counts[i])
}

// admits reports whether a request for n at u, allowed to fill the windows up to usable
// (Burst less its reserve), fits: est + n ≤ usable, tested as est ≤ usable − n, whose right
// side is exact.
func (m *windowModel) admits(u, n, usable int64) bool {
	return m.estimate(u) <= float64(usable-n)
}

// decide answers a request for n at u, allowed to fill the windows up to usable, without
// recording it.
func (m *windowModel) decide(u, n, usable int64) ratelimit.Result {
	est := m.estimate(u)
	res := ratelimit.Result{Allowed: m.admits(u, n, usable)}
	last := int64(-1) // the last window that admitted anything, this request included
	if len(m.log) > 0 {
		last = m.index(m.log[len(m.log)-1].at)
	}
	if res.Allowed {
		est += float64(n)
		last = m.index(u)
	}
	res.Remaining = int(max(0, min(usable, int64(math.Floor(float64(usable)-est)))))
	if last >= 0 {
		if calm := (last + m.span()) * m.w; calm > u {
			res.ResetAfter = time.Duration(calm-u) * time.Microsecond
		}
	}
	if !res.Allowed {
		// Bisect for the least d with admits(u + d): it holds once every window that counts
		// anything has stopped weighing, and only gets truer as time passes.
		lo, hi := int64(1), (m.index(u)+m.span())*m.w-u
		for lo < hi {
			mid := lo + (hi-lo)/2
			if m.admits(u+mid, n, usable) {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		res.RetryAfter = time.Duration(lo) * time.Microsecond
	}
	return res
}

// admit records an admission and checks the algorithm's bounds on the admissions so far.
func (m *windowModel) admit(t testing.TB, u, n int64) {
	t.Helper()
	m.counts[m.index(u)] += n
	m.log = append(m.log, admission{u, n})
	require.LessOrEqual(t, m.counts[m.index(u)], m.burst, "more than Burst in one fixed window")
	if m.counter {
		// The busiest interval of length W ending at u: (u − W, u].
		sum := int64(0)
		for j := len(m.log) - 1; j >= 0 && m.log[j].at > u-m.w; j-- {
			sum += m.log[j].n
		}
		// The interval holds A ≤ Burst admissions of one fixed window and C of the next.
		// While A > 0, each admission in the next window saw est ≥ cur + A·(W − y)/W > cur,
		// so C < Burst: A + C < 2·Burst.
		require.Less(t, sum, 2*m.burst, "2·Burst or more within W")
	}
}
