package ratelimittest

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// The rules of priority reserves (ratelimit.Priority, ratelimit.Reserves), for every
// algorithm: a request of priority p for n tokens is decided as AllowN would decide it on the
// same bucket with Burst replaced by Burst − R, R = Reserves.Tokens(p, Burst), for the
// admission, RetryAfter and Remaining; the bucket itself (refill, windows, expiry, identity)
// keeps the real Burst. Run runs them when the Harness declares Reserves.
//
// Most timelines use Limit{Rate: 1, Burst: 10}: T = 1 s, and W = 10 s for the window
// algorithms, whose windows then start on the harness clock's first reading (Unix
// 1,767,225,600 s, a multiple of 10). The default reserves keep ⌊0.1 × 10⌋ = 1 token back
// from Normal requests and ⌊0.5 × 10⌋ = 5 from Sheddable ones: a Sheddable request passes
// while the bucket holds 6 tokens or more, a Normal one while it holds 2 or more, a
// Critical one while it holds 1.

var priorityRules = []rule{
	{"Ladder", priorityLadder},
	{"ExceedsBurst", priorityExceedsBurst},
	{"DenialTakesNothing", priorityDenialTakesNothing},
	{"CriticalIsDefault", priorityCriticalIsDefault},
	{"CustomReserves", priorityCustomReserves},
	{"ReservesOff", priorityReservesOff},
	{"SmallBursts", prioritySmallBursts},
	{"HugeBurst", priorityHugeBurst},
	{"Concurrency", priorityConcurrency},
	{"Inspector", priorityInspector},
	{"AllowAll", priorityAllowAll},
	{"AgainstModel", priorityAgainstModel},
}

// ten is the limit of most timelines below.
var ten = ratelimit.Limit{Rate: 1, Burst: 10}

// pstep is one moment of a priority timeline: move the clock, ask for n tokens (1 if n is
// 0) at priority p, and expect a result (its Limit field is filled in by playPriority).
type pstep struct {
	advance time.Duration
	p       ratelimit.Priority
	n       int
	want    ratelimit.Result
}

// playPriority runs steps in order against one bucket of l, whose clock h moves, and checks
// every result exactly.
func playPriority(t testing.TB, h harness, l ratelimit.Limiter, key string, limit ratelimit.Limit, steps []pstep) {
	t.Helper()
	for i, s := range steps {
		h.Advance(s.advance)
		n := max(s.n, 1)
		got, err := l.AllowN(ratelimit.WithPriority(context.Background(), s.p), key, limit, n)
		require.NoError(t, err, "step %d", i)
		want := s.want
		want.Limit = limit
		require.Equal(t, want, uncharged(t, got), "step %d (%v, n=%d)", i, s.p, n)
	}
}

// outcome is what a step of an algorithm-free timeline checks: whether the request passed,
// and what remains to its priority.
type outcome struct {
	p         ratelimit.Priority
	n         int
	allowed   bool
	remaining int
}

// playOutcomes runs steps on one bucket of l, the clock standing still, and checks Allowed
// and Remaining, which every algorithm answers alike while no time passes; and that
// RetryAfter is positive exactly on denials.
func playOutcomes(t testing.TB, l ratelimit.Limiter, key string, limit ratelimit.Limit, steps []outcome) {
	t.Helper()
	for i, s := range steps {
		n := max(s.n, 1)
		got, err := l.AllowN(ratelimit.WithPriority(context.Background(), s.p), key, limit, n)
		require.NoError(t, err, "step %d", i)
		assert.Equal(t, s.allowed, got.Allowed, "step %d (%v, n=%d)", i, s.p, n)
		assert.Equal(t, s.remaining, got.Remaining, "step %d (%v, n=%d)", i, s.p, n)
		require.Equal(t, got.Allowed, got.RetryAfter == 0, "step %d: %+v", i, got)
	}
}

// repeat returns count steps asking for one token at p, allowed or not, the first leaving
// remaining and each one after it one less (never below 0) when allowed.
func repeat(p ratelimit.Priority, count int, allowed bool, remaining int) []outcome {
	steps := make([]outcome, count)
	for i := range steps {
		steps[i] = outcome{p: p, allowed: allowed, remaining: remaining}
		if allowed {
			remaining = max(remaining-1, 0)
		}
	}
	return steps
}

const (
	critical  = ratelimit.Critical
	normal    = ratelimit.Normal
	sheddable = ratelimit.Sheddable
	sec       = time.Second
)

// ladderRequests are the priorities of the ladder, in order, all at the same instant: six
// Sheddable (five pass), five Normal (four pass), two Critical (one passes), then one
// Sheddable and one Normal more, denied, to compare their RetryAfter with the Critical one's.
var ladderRequests = []ratelimit.Priority{
	sheddable, sheddable, sheddable, sheddable, sheddable, sheddable,
	normal, normal, normal, normal, normal,
	critical, critical,
	sheddable, normal,
}

// priorityLadder drains a full bucket of 10 from the bottom priority up, with the clock
// standing still, then lets time pass until each priority's RetryAfter: each priority stops
// at its reserve and is told when it passes again, for its priority.
func priorityLadder(t testing.TB, h harness) {
	want, then := ladderOf(h.Algorithm)
	require.Len(t, want, len(ladderRequests))
	steps := make([]pstep, len(want))
	for i, w := range want {
		steps[i] = pstep{p: ladderRequests[i], want: w}
	}
	playPriority(t, h, h.Limiter, "ladder", ten, append(steps, then...))
	if h.Algorithm == ratelimit.SlidingWindowLog {
		priorityLogSpread(t, h)
	}
}

// ladderOf returns, for algorithm a, the answers to ladderRequests and the timeline that
// follows them on the same bucket.
func ladderOf(a ratelimit.Algorithm) (ladder []ratelimit.Result, then []pstep) {
	switch a {
	case ratelimit.TokenBucket, ratelimit.LeakyBucket:
		// GCRA, counted in tokens: ahead = TAT − now is what the bucket is missing. A request
		// of n at reserve R passes when ahead ≤ (10 − R) − n; it leaves ⌊10 − R − ahead⌋
		// (never below 0); a denial is told to come back after ahead − (10 − R − n) seconds.
		// ResetAfter is ahead, after the request. The leaky bucket decides alike and adds
		// Delay, the queue before the request: ahead before it.
		leaky := a == ratelimit.LeakyBucket
		ok := func(remaining int, ahead time.Duration) ratelimit.Result {
			res := allowed(remaining, ahead)
			if leaky {
				res.Delay = ahead - sec
			}
			return res
		}
		ladder = []ratelimit.Result{
			// Sheddable (R = 5) passes while ahead ≤ 4.
			ok(4, 1*sec), ok(3, 2*sec), ok(2, 3*sec), ok(1, 4*sec), ok(0, 5*sec),
			denied(0, 1*sec, 5*sec), // ahead 5: one second to ahead 4
			// Normal (R = 1) passes while ahead ≤ 8: ⌊9 − 6⌋ = 3 left after the first.
			ok(3, 6*sec), ok(2, 7*sec), ok(1, 8*sec), ok(0, 9*sec),
			denied(0, 1*sec, 9*sec),
			// Critical passes while ahead ≤ 9.
			ok(0, 10*sec),
			denied(0, 1*sec, 10*sec),
			// The bucket is empty: Critical is a second away, Sheddable six (to ahead 4), Normal
			// two (to ahead 8).
			denied(0, 6*sec, 10*sec),
			denied(0, 2*sec, 10*sec),
		}
		delay := func(d time.Duration) time.Duration {
			if leaky {
				return d
			}
			return 0
		}
		then = []pstep{
			// 1.999 s on, ahead 8.001: Normal is 1 ms away, and then passes.
			{advance: 1999 * ms, p: normal, want: denied(0, ms, 8001*ms)},
			{advance: ms, p: normal, want: ratelimit.Result{Allowed: true, ResetAfter: 9 * sec, Delay: delay(8 * sec)}},
			// 5 s on, ahead 4: one Sheddable passes, the next is a second away, and the higher
			// priorities still pass: ⌊10 − 6⌋ = 4 left to Critical, ⌊9 − 7⌋ = 2 to Normal.
			{advance: 5 * sec, p: sheddable, want: ratelimit.Result{Allowed: true, ResetAfter: 5 * sec, Delay: delay(4 * sec)}},
			{p: sheddable, want: denied(0, 1*sec, 5*sec)},
			{p: critical, want: ratelimit.Result{Allowed: true, Remaining: 4, ResetAfter: 6 * sec, Delay: delay(5 * sec)}},
			{p: normal, want: ratelimit.Result{Allowed: true, Remaining: 2, ResetAfter: 7 * sec, Delay: delay(6 * sec)}},
		}
	case ratelimit.FixedWindow:
		// One window of 10 s, starting now: a request of n at reserve R passes while the
		// count plus n is at most 10 − R; every denial waits for the next window.
		w := 10 * sec
		ladder = []ratelimit.Result{
			allowed(4, w), allowed(3, w), allowed(2, w), allowed(1, w), allowed(0, w),
			denied(0, w, w),
			allowed(3, w), allowed(2, w), allowed(1, w), allowed(0, w),
			denied(0, w, w),
			allowed(0, w),
			denied(0, w, w),
			denied(0, w, w),
			denied(0, w, w),
		}
		then = []pstep{
			{advance: 9999 * ms, p: sheddable, want: denied(0, ms, ms)},
			// A new window: five Sheddable pass again, then Normal (count 6 of its 9) and
			// Critical (count 7 of 10).
			{advance: ms, p: sheddable, want: allowed(4, w)},
			{p: sheddable, want: allowed(3, w)},
			{p: sheddable, want: allowed(2, w)},
			{p: sheddable, want: allowed(1, w)},
			{p: sheddable, want: allowed(0, w)},
			{p: sheddable, want: denied(0, w, w)},
			{p: normal, want: allowed(3, w)},
			{p: critical, want: allowed(3, w)},
		}
	case ratelimit.SlidingWindowCounter:
		// At 0 µs into window 0: est = cur. A request of n at reserve R passes while
		// est ≤ 10 − R − n. Once denied it waits for window 1, where est = cur·(W − y)/W,
		// for the least y (whole µs) with cur·(W − y)/W ≤ 10 − R − n. ResetAfter is 2W.
		w2 := 20 * sec
		ladder = []ratelimit.Result{
			allowed(4, w2), allowed(3, w2), allowed(2, w2), allowed(1, w2), allowed(0, w2),
			// cur 5, room 4: 5·(W − y)/W ≤ 4 from y = 2 s: 10 + 2 s.
			denied(0, 12*sec, w2),
			allowed(3, w2), allowed(2, w2), allowed(1, w2), allowed(0, w2),
			// cur 9, room 8: 9·(W − y)/W ≤ 8 from y = ⌈W/9⌉ = 1,111,112 µs
			// (9 × 8,888,888 / 10⁷ = 7.9999992; a µs earlier, 8.0000001).
			denied(0, 11111112*time.Microsecond, w2),
			allowed(0, w2),
			// cur 10: room 9 from y = 1 s, room 4 from 6 s, room 8 from 2 s.
			denied(0, 11*sec, w2),
			denied(0, 16*sec, w2),
			denied(0, 12*sec, w2),
		}
		then = []pstep{
			// 15.999 s: 5.999 s into window 1, est = 10 × 4.001/10 = 4.001 > 4: Sheddable is
			// 1 ms away; the window's count, 0, resets once window 1 ends, 4.001 s on.
			{advance: 15999 * ms, p: sheddable, want: denied(0, ms, 4001*ms)},
			// est = 4: it passes, and est becomes 5, with cur 1: full again at the end of
			// window 2, 14 s on.
			{advance: ms, p: sheddable, want: allowed(0, 14*sec)},
			// est 5, cur 1: 10·(W − y)/W + 1 ≤ 4 from y = 7 s, a second on.
			{p: sheddable, want: denied(0, sec, 14*sec)},
			// est 5 + 1: ⌊10 − 6⌋ = 4 left to Critical; then ⌊9 − 7⌋ = 2 to Normal.
			{p: critical, want: allowed(4, 14*sec)},
			{p: normal, want: allowed(2, 14*sec)},
		}
	case ratelimit.SlidingWindowLog:
		// Every entry at the same instant: each denial waits for them all to leave, W on.
		w := 10 * sec
		ladder = []ratelimit.Result{
			allowed(4, w), allowed(3, w), allowed(2, w), allowed(1, w), allowed(0, w),
			denied(0, w, w),
			allowed(3, w), allowed(2, w), allowed(1, w), allowed(0, w),
			denied(0, w, w),
			allowed(0, w),
			denied(0, w, w),
			denied(0, w, w),
			denied(0, w, w),
		}
		// On a log of entries a second apart the priorities wait for different entries: a
		// request of n at reserve R that finds count entries in the window waits until the
		// k-th oldest leaves, k = count + n − (10 − R). See priorityLogSpread.
		then = nil
	}
	return ladder, then
}

// priorityLogSpread is the sliding log's own ladder, entries a second apart, where each
// priority waits for a different entry to leave. It runs within priorityLadder's rule for
// the sliding log (see priorityAgainstModel for the random timelines).
func priorityLogSpread(t testing.TB, h harness) {
	w := 10 * sec
	playPriority(t, h, h.Limiter, "spread", ten, []pstep{
		// Entries at 0, 1, 2, 3 and 4 s.
		{p: sheddable, want: allowed(4, w)},
		{advance: sec, p: sheddable, want: allowed(3, w)},
		{advance: sec, p: sheddable, want: allowed(2, w)},
		{advance: sec, p: sheddable, want: allowed(1, w)},
		{advance: sec, p: sheddable, want: allowed(0, w)},
		// 5 s: five in the window; k = 5 + 1 − 5 = 1: the entry of 0 s leaves at 10 s. The
		// newest, of 4 s, leaves at 14 s.
		{advance: sec, p: sheddable, want: denied(0, 5*sec, 9*sec)},
		// Entries at 5, 6, 7 and 8 s: nine in the window.
		{p: normal, want: allowed(3, w)},
		{advance: sec, p: normal, want: allowed(2, w)},
		{advance: sec, p: normal, want: allowed(1, w)},
		{advance: sec, p: normal, want: allowed(0, w)},
		// 9 s: k = 9 + 1 − 9 = 1: the entry of 0 s, 1 s on.
		{advance: sec, p: normal, want: denied(0, sec, 9*sec)},
		// The tenth entry, at 9 s.
		{p: critical, want: allowed(0, w)},
		// Ten in the window: Critical waits for the first entry (k = 1, at 10 s), Sheddable
		// for the sixth (k = 6, the entry of 5 s, at 15 s), Normal for the second (k = 2, at
		// 11 s).
		{p: critical, want: denied(0, sec, w)},
		{p: sheddable, want: denied(0, 6*sec, w)},
		{p: normal, want: denied(0, 2*sec, w)},
		// 14.999 s: entries 5 to 9 s in the window, five: the entry of 5 s is 1 ms from
		// leaving; the newest, of 9 s, 4.001 s.
		{advance: 5999 * ms, p: sheddable, want: denied(0, ms, 4001*ms)},
		{advance: ms, p: sheddable, want: allowed(0, w)},
	})
}

// priorityExceedsBurst: n above the burst left to a priority can never pass at it: an error
// wrapping ErrExceedsBurst, which takes nothing and names no key.
func priorityExceedsBurst(t testing.TB, h harness) {
	const key = "user:secret-42"
	cases := []struct {
		p ratelimit.Priority
		n int
	}{{sheddable, 6}, {sheddable, 10}, {normal, 10}}
	for _, c := range cases {
		ctx := ratelimit.WithPriority(context.Background(), c.p)
		res, err := h.Limiter.AllowN(ctx, key, ten, c.n)
		require.ErrorIs(t, err, ratelimit.ErrExceedsBurst, "%v n=%d", c.p, c.n)
		assert.NotContains(t, err.Error(), "secret", "the error names the key")
		assert.Equal(t, ratelimit.Result{Limit: ten}, res)
		if ins, ok := h.Limiter.(ratelimit.Inspector); ok {
			_, err = ins.Peek(ctx, key, ten, c.n)
			require.ErrorIs(t, err, ratelimit.ErrExceedsBurst, "Peek %v n=%d", c.p, c.n)
		}
		if ml, ok := h.Limiter.(ratelimit.MultiLimiter); ok {
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
			c = ratelimit.WithPriority(ctx, ratelimit.Critical)
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
	l := h.Reserves(ratelimit.Reserves{Normal: 0.2, Sheddable: 0.7})
	steps := repeat(sheddable, 3, true, 2)
	steps = append(steps, outcome{p: sheddable})
	steps = append(steps, repeat(normal, 5, true, 4)...)
	steps = append(steps, outcome{p: normal}, outcome{p: sheddable})
	steps = append(steps, repeat(critical, 2, true, 1)...)
	steps = append(steps, outcome{p: critical})
	playOutcomes(t, l, "custom", ten, steps)

	// Sheddable 7 keeps 7 back: its largest request is 3 tokens.
	_, err := l.AllowN(ratelimit.WithPriority(context.Background(), sheddable), "custom-n", ten, 4)
	require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
	playOutcomes(t, l, "custom-n", ten, []outcome{{p: sheddable, n: 3, allowed: true}})
}

// priorityReservesOff: a negative reserve keeps nothing back; the other keeps its default.
func priorityReservesOff(t testing.TB, h harness) {
	off := h.Reserves(ratelimit.Reserves{Normal: -1, Sheddable: -1})
	playOutcomes(t, off, "off", ten, append(repeat(sheddable, 10, true, 9), outcome{p: sheddable}))
	playOutcomes(t, off, "off-n", ten, []outcome{{p: sheddable, n: 10, allowed: true}})

	normalOff := h.Reserves(ratelimit.Reserves{Normal: -1})
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

// priorityHugeBurst: at Burst = ratelimit.MaxBurst (2^52) the reserves are exact too: the
// default ones are ⌊0.1 × 2^52⌋ = 450,359,962,737,049 and 2^51 tokens, and the three
// priorities take, in turn, exactly the 2^52 tokens of the bucket, each down to its reserve.
// The sliding log refuses such a Burst (ratelimit.MaxLogBurst): its part is the rest of the
// suite's.
func priorityHugeBurst(t testing.TB, h harness) {
	if h.Algorithm == ratelimit.SlidingWindowLog {
		return
	}
	const huge = ratelimit.MaxBurst
	limit := ratelimit.Limit{Rate: 1e6, Burst: huge} // T = 1 µs, W = 2^52 µs
	rn := ratelimit.Reserves{}.Tokens(normal, huge)
	require.Equal(t, 450_359_962_737_049, rn)
	require.Equal(t, huge/2, ratelimit.Reserves{}.Tokens(sheddable, huge))
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
	_, err := h.Limiter.AllowN(ratelimit.WithPriority(context.Background(), sheddable), "huge", limit, huge/2+1)
	require.ErrorIs(t, err, ratelimit.ErrExceedsBurst)
}

// priorityConcurrency: 64 goroutines of mixed priorities on one bucket whose clock stands
// still. Burst 100 with a Normal reserve of 0.2: 20 tokens kept from Normal, 50 from
// Sheddable. 16 goroutines make one Critical request each, fewer than the Normal reserve,
// beside 16 making 8 Normal requests each and 32 making 8 Sheddable ones: every Critical
// request passes, whatever the order, since only Critical requests can take the bucket below
// 20 tokens; Sheddable ones take at most 50; and Normal ones, more than the 80 tokens they
// may take, leave the bucket at their reserve or below, so that between 4 and 20 tokens are
// left, exactly as many as Critical requests can then take.
func priorityConcurrency(t testing.TB, h harness) {
	l := h.Reserves(ratelimit.Reserves{Normal: 0.2})
	limit := ratelimit.Limit{Rate: 1, Burst: 100}
	const goroutines, criticals, attempts = 64, 16, 8
	var admitted [3]atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	start := make(chan struct{})
	run := func(p ratelimit.Priority, count int) {
		<-start
		ctx := ratelimit.WithPriority(context.Background(), p)
		for range count {
			res, err := l.Allow(ctx, "hot", limit)
			if err != nil {
				errs <- err
				return
			}
			if res.Allowed {
				admitted[p].Add(1)
			}
		}
	}
	for i := range goroutines {
		switch {
		case i%4 == 0: // 16, spread among the others
			wg.Go(func() { run(critical, 1) })
		case i%2 == 0:
			wg.Go(func() { run(normal, attempts) })
		default:
			wg.Go(func() { run(sheddable, attempts) })
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	c, n, s := admitted[critical].Load(), admitted[normal].Load(), admitted[sheddable].Load()
	require.Equal(t, int64(criticals), c, "a Critical request was denied while the reserve held")
	require.LessOrEqual(t, s, int64(50), "Sheddable requests took from the Sheddable reserve")
	left := 100 - (c + n + s)
	require.True(t, 4 <= left && left <= 20, "%d tokens left (critical %d, normal %d, sheddable %d)", left, c, n, s)

	if ins, ok := l.(ratelimit.Inspector); ok {
		// What is left, read without taking it: Critical would take one, leaving left − 1.
		res, err := ins.Peek(context.Background(), "hot", limit, 1)
		require.NoError(t, err)
		require.True(t, res.Allowed)
		require.Equal(t, int(left-1), res.Remaining)
	}
	// Exactly what is left passes, at Critical, and not one token more: 100 in all.
	steps := repeat(critical, int(left), true, int(left-1))
	playOutcomes(t, l, "hot", limit, append(steps, outcome{p: critical}, outcome{p: normal}))
}

// priorityInspector: Peek answers what AllowN would at the priority of its context, and
// Refund answers as Peek for one token at it.
func priorityInspector(t testing.TB, h harness) {
	ins, ok := h.Limiter.(ratelimit.Inspector)
	if !ok {
		return // a backend without Inspector: nothing to check
	}
	bg := context.Background()
	playOutcomes(t, h.Limiter, "peek", ten, []outcome{{p: critical, n: 5, allowed: true, remaining: 5}})
	for _, p := range []ratelimit.Priority{sheddable, normal, critical} {
		ctx := ratelimit.WithPriority(bg, p)
		for _, n := range []int{1, 2} {
			peeked, err := ins.Peek(ctx, "peek", ten, n)
			require.NoError(t, err)
			// The bucket holds 5: Sheddable (R 5) is denied, Normal (R 1) and Critical pass.
			require.Equal(t, p != sheddable, peeked.Allowed, "%v n=%d", p, n)
			if !peeked.Allowed {
				require.Zero(t, peeked.Remaining)
				require.Positive(t, peeked.RetryAfter)
			}
			// Peek took nothing: a second Peek answers alike.
			again, err := ins.Peek(ctx, "peek", ten, n)
			require.NoError(t, err)
			require.Equal(t, peeked, again)
		}
	}
	// The Sheddable AllowN is the Sheddable Peek.
	shed := ratelimit.WithPriority(bg, sheddable)
	peeked, err := ins.Peek(shed, "peek", ten, 1)
	require.NoError(t, err)
	got, err := h.Limiter.Allow(shed, "peek", ten)
	require.NoError(t, err)
	require.Equal(t, peeked, got)
	// Normal takes one (4 left, 3 of them to Normal); a refund of it at Sheddable answers as
	// a Sheddable Peek: 5 held, none of them Sheddable's.
	playOutcomes(t, h.Limiter, "peek", ten, []outcome{{p: normal, allowed: true, remaining: 3}})
	refunded, err := ins.Refund(shed, "peek", ten, 1, ratelimit.Charge{})
	require.NoError(t, err)
	peeked, err = ins.Peek(shed, "peek", ten, 1)
	require.NoError(t, err)
	require.Equal(t, peeked, refunded)
	require.False(t, refunded.Allowed)
	require.Zero(t, refunded.Remaining)
	// A Normal Peek sees 4 of the 5 tokens: 3 left to it after one.
	peeked, err = ins.Peek(ratelimit.WithPriority(bg, normal), "peek", ten, 1)
	require.NoError(t, err)
	require.True(t, peeked.Allowed)
	require.Equal(t, 3, peeked.Remaining)
}

// priorityAllowAll: AllowAll decides every request at the priority of its context, each
// keeping its own bucket's reserve, all or nothing.
func priorityAllowAll(t testing.TB, h harness) {
	ml, ok := h.Limiter.(ratelimit.MultiLimiter)
	if !ok {
		return // a backend without MultiLimiter: nothing to check
	}
	four := ratelimit.Limit{Rate: 1, Burst: 4} // Sheddable keeps ⌊2⌋ back
	shed := ratelimit.WithPriority(context.Background(), sheddable)
	all := func(ctx context.Context, na, nb int) ratelimit.MultiResult {
		t.Helper()
		mr, err := ml.AllowAll(ctx, []ratelimit.Request{
			{Key: "a", Limit: ten, N: na, Name: "ten"},
			{Key: "b", Limit: four, N: nb, Name: "four"},
		})
		require.NoError(t, err)
		return mr
	}
	// Sheddable takes what it may of both: 5 of 10 and 2 of 4.
	mr := all(shed, 5, 2)
	require.True(t, mr.Allowed)
	require.Equal(t, []int{0, 0}, []int{mr.Results[0].Remaining, mr.Results[1].Remaining})
	// Then any Sheddable request is denied, each Result as AllowN alone would say.
	mr = all(shed, 1, 1)
	require.False(t, mr.Allowed)
	for i, res := range mr.Results {
		require.False(t, res.Allowed, "request %d", i)
		require.Zero(t, res.Remaining, "request %d", i)
		require.Positive(t, res.RetryAfter, "request %d", i)
	}
	// Normal passes on the first (5 left, 1 kept back), not on the second (2 left, ⌊0.4⌋ = 0
	// kept back, 3 asked): neither is charged.
	mr = all(ratelimit.WithPriority(context.Background(), normal), 1, 3)
	require.False(t, mr.Allowed)
	require.True(t, mr.Results[0].Allowed)
	require.False(t, mr.Results[1].Allowed)
	require.Equal(t, 1, mr.Binding)
	// Critical takes everything that is left: 5 and 2.
	mr = all(context.Background(), 5, 2)
	require.True(t, mr.Allowed)
	require.Equal(t, []int{0, 0}, []int{mr.Results[0].Remaining, mr.Results[1].Remaining})
}

// priorityAgainstModel plays random timelines of random priorities against the reference
// models of the window algorithms, the sliding log and the leaky bucket (the token bucket
// decides as the leaky bucket does; the ladder pins it), each request decided as under
// Burst less its reserve: the "Burst − R" rule, checked on thousands of states.
func priorityAgainstModel(t testing.TB, h harness) {
	rng := rand.New(rand.NewPCG(18, 18))
	prioritized := func(limit ratelimit.Limit, n int) (ratelimit.Priority, int) {
		p := ratelimit.Priority(rng.IntN(3))
		return p, min(n, usable(limit, p))
	}
	switch h.Algorithm {
	case ratelimit.FixedWindow, ratelimit.SlidingWindowCounter:
		now := NewClock().Now()
		advance := h.Advance
		h.Advance = func(d time.Duration) {
			advance(d)
			now = now.Add(d)
		}
		for i, limit := range []ratelimit.Limit{{Rate: 5, Burst: 8}, {Rate: 0.1, Burst: 6}, {Rate: 7, Burst: 50}} {
			arrivals := randomWindowArrivals(uint64(i+30), limit, 300)
			for j := range arrivals {
				arrivals[j].Priority, arrivals[j].N = prioritized(limit, arrivals[j].N)
			}
			admitted, denied := checkWindowModel(t, h, now, "prio"+limit.String(), limit, arrivals)
			require.Positive(t, admitted, "%v", limit)
			require.Positive(t, denied, "%v", limit)
		}
	case ratelimit.SlidingWindowLog, ratelimit.LeakyBucket:
		limit := ratelimit.Limit{Rate: 10, Burst: 9} // W = 900 ms
		ops := randomOps(31, 300, 150*ms, 3)
		for j := range ops {
			ops[j].Priority, ops[j].N = prioritized(limit, ops[j].N)
		}
		if h.Algorithm == ratelimit.SlidingWindowLog {
			checkSlidingLog(t, h, limit, ops)
		} else {
			checkLeakyBucket(t, h, limit, ops)
		}
	}
}
