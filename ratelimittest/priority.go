package ratelimittest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// The rules of priority reserves (priority.Level, priority.Reserves), for every
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
	p       priority.Level
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
		got, err := l.AllowN(priority.With(context.Background(), s.p), key, limit, n)
		require.NoError(t, err, "step %d", i)
		want := s.want
		want.Limit = limit
		require.Equal(t, want, uncharged(t, got), "step %d (%v, n=%d)", i, s.p, n)
	}
}

// outcome is what a step of an algorithm-free timeline checks: whether the request passed,
// and what remains to its priority.
type outcome struct {
	p         priority.Level
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
		got, err := l.AllowN(priority.With(context.Background(), s.p), key, limit, n)
		require.NoError(t, err, "step %d", i)
		assert.Equal(t, s.allowed, got.Allowed, "step %d (%v, n=%d)", i, s.p, n)
		assert.Equal(t, s.remaining, got.Remaining, "step %d (%v, n=%d)", i, s.p, n)
		require.Equal(t, got.Allowed, got.RetryAfter == 0, "step %d: %+v", i, got)
	}
}

// repeat returns count steps asking for one token at p, allowed or not, the first leaving
// remaining and each one after it one less (never below 0) when allowed.
func repeat(p priority.Level, count int, allowed bool, remaining int) []outcome {
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
	critical  = priority.Critical
	normal    = priority.Normal
	sheddable = priority.Sheddable
	sec       = time.Second
)

// ladderRequests are the priorities of the ladder, in order, all at the same instant: six
// Sheddable (five pass), five Normal (four pass), two Critical (one passes), then one
// Sheddable and one Normal more, denied, to compare their RetryAfter with the Critical one's.
var ladderRequests = []priority.Level{
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
