package ratelimittest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
)

// The rules of refunds that name their charge (ratelimit.Result.Charge), run by RunInspector:
// a refund gives back only what the decision took, where it took it, so that refunds never
// let through more requests than if the refunded ones had not been made. The timelines are
// logins under 5 a minute where a successful login gets its token back: every failure
// stays charged.

// refundRulesOf returns the charge rules of algorithm a.
func refundRulesOf(a ratelimit.Algorithm) []rule {
	rules := []rule{{"ChargeInstant", chargeInstant}}
	switch a {
	case ratelimit.FixedWindow:
		rules = append(rules, rule{"RefundChargedWindow", fwRefundChargedWindow})
	case ratelimit.SlidingWindowCounter:
		rules = append(rules, rule{"RefundChargedWindow", swcRefundChargedWindow})
	case ratelimit.SlidingWindowLog:
		rules = append(rules, rule{"RefundChargedEntries", swlRefundChargedEntries},
			rule{"RefundAfterWindow", swlRefundAfterWindow})
	}
	return rules
}

// chargeInstant: every admission, of AllowN or AllowAll, carries a Charge whose instant
// moves exactly as the clock does, to the microsecond; admissions at one instant carry the
// same one; a denial and a Peek carry none.
func chargeInstant(t testing.TB, h harness) {
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 1, Burst: 2} // W = 2 s for the windows
	charge := func(want bool) ratelimit.Charge {
		t.Helper()
		res, err := h.Limiter.Allow(ctx, "c", limit)
		require.NoError(t, err)
		require.Equal(t, want, res.Allowed)
		require.Equal(t, want, !res.Charge.At.IsZero(), "%+v", res.Charge)
		return res.Charge
	}
	first := charge(true)
	require.Equal(t, first, charge(true), "the same instant")
	require.Equal(t, ratelimit.Charge{}, charge(false), "a denial")
	// Four seconds on, every algorithm has room again (the counter's window 1 counted nothing).
	const later = 4*time.Second + 7*time.Microsecond
	h.Advance(later)
	fourth := charge(true)
	require.Equal(t, later, fourth.At.Sub(first.At))
	require.Equal(t, first.Part, fourth.Part)
	if ins, ok := ratelimit.As[ratelimit.Inspector](h.Limiter); ok {
		res, err := ins.Peek(ctx, "c", limit, 1)
		require.NoError(t, err)
		require.Equal(t, ratelimit.Charge{}, res.Charge, "Peek")
	}
	if _, ok := ratelimit.As[ratelimit.MultiLimiter](h.Limiter); !ok {
		return
	}
	mr := allowAll(t, h, ratelimit.Request{Key: "m1", Limit: limit}, ratelimit.Request{Key: "m2", Limit: limit, N: 2},
		ratelimit.Request{Key: "skipped"})
	require.True(t, mr.Allowed)
	require.Equal(t, fourth, mr.Results[0].Charge)
	require.Equal(t, fourth, mr.Results[1].Charge)
	require.Equal(t, ratelimit.Charge{}, mr.Results[2].Charge, "a skipped entry takes nothing")
	mr = allowAll(t, h, ratelimit.Request{Key: "m1", Limit: limit}, ratelimit.Request{Key: "m2", Limit: limit})
	require.False(t, mr.Allowed)
	require.True(t, mr.Results[0].Allowed, "m1 alone would pass")
	require.Equal(t, ratelimit.Charge{}, mr.Results[0].Charge, "but a denied AllowAll took nothing")
}

// login is one step of a login timeline on key "login" under 5 a minute: at at, since the
// start, either an attempt named name, which is allowed or not as want says, or, with
// refund, the refund of attempt name, with its charge: the login succeeded.
type login struct {
	at     time.Duration
	name   string
	refund bool
	want   bool
}

var fivePerMinute = ratelimit.PerMinute(5)

// playLogins plays steps and returns the instants, since the start, of the attempts that
// were allowed and not refunded: the charged ones.
func playLogins(t testing.TB, h harness, steps []login) []time.Duration {
	t.Helper()
	ctx := context.Background()
	ins := capability[ratelimit.Inspector](h.Limiter)
	charges := map[string]ratelimit.Charge{}
	charged := map[string]time.Duration{}
	var now time.Duration
	for _, s := range steps {
		require.GreaterOrEqual(t, s.at, now, "%s: the steps go forward", s.name)
		h.Advance(s.at - now)
		now = s.at
		if s.refund {
			c, ok := charges[s.name]
			require.True(t, ok, "refund of %s, which was not allowed", s.name)
			_, err := ins.Refund(ctx, "login", fivePerMinute, 1, c)
			require.NoError(t, err, "refund of %s", s.name)
			delete(charged, s.name)
			continue
		}
		res, err := h.Limiter.Allow(ctx, "login", fivePerMinute)
		require.NoError(t, err, s.name)
		require.Equal(t, s.want, res.Allowed, "%s at %v", s.name, s.at)
		if res.Allowed {
			charges[s.name], charged[s.name] = res.Charge, s.at
		}
	}
	var times []time.Duration
	for _, at := range charged {
		times = append(times, at)
	}
	return times
}

// chargedIn returns how many of times lie in [from, from+d).
func chargedIn(times []time.Duration, from, d time.Duration) int {
	n := 0
	for _, at := range times {
		if at >= from && at < from+d {
			n++
		}
	}
	return n
}

// fwRefundChargedWindow: four successful logins charged 100 ms before a window ends and
// refunded 100 ms into the next, after five failures have filled it, give nothing to the
// next window, which they never took from: it stays full, and holds five charged attempts,
// not nine.
func fwRefundChargedWindow(t testing.TB, h harness) {
	w := time.Minute
	steps := []login{
		{at: w - 100*ms, name: "ok1", want: true}, {at: w - 100*ms, name: "ok2", want: true},
		{at: w - 100*ms, name: "ok3", want: true}, {at: w - 100*ms, name: "ok4", want: true},
	}
	for i := range 5 {
		steps = append(steps, login{at: w, name: fmt.Sprint("fail", i), want: true})
	}
	for i := range 4 {
		steps = append(steps, login{at: w + 100*ms, name: fmt.Sprint("ok", i+1), refund: true})
	}
	for i := range 5 {
		steps = append(steps, login{at: w + 200*ms, name: fmt.Sprint("late", i), want: false})
	}
	// A refund in the window it was charged in gives back, as ever.
	steps = append(steps, login{at: 2 * w, name: "next", want: true}, login{at: 2*w + 100*ms, name: "next", refund: true})
	for i := range 5 {
		steps = append(steps, login{at: 2*w + 200*ms, name: fmt.Sprint("again", i), want: true})
	}
	times := playLogins(t, h, steps)
	require.Equal(t, 5, chargedIn(times, w, w), "the window from 1:00")
}

// swcRefundChargedWindow: two successful logins charged 100 ms before a window ends and
// refunded 100 ms into the next are taken from the count they were added to, now the
// previous window's, not from the three failures of the new window: at the new window's
// end (when the previous one weighs nearly nothing) two more attempts pass, not three, and
// the window holds five charged attempts, not six.
func swcRefundChargedWindow(t testing.TB, h harness) {
	w := time.Minute
	steps := []login{
		{at: w - 100*ms, name: "ok1", want: true}, {at: w - 100*ms, name: "ok2", want: true},
		// est = 2·(W − 0)/W + cur ≤ 4 admits three.
		{at: w, name: "fail1", want: true}, {at: w, name: "fail2", want: true}, {at: w, name: "fail3", want: true},
		{at: w, name: "fail4", want: false},
		{at: w + 100*ms, name: "ok1", refund: true}, {at: w + 100*ms, name: "ok2", refund: true},
		// est = 0 + 3 admits two; the previous window's count, refunded, weighs nothing.
		{at: 2*w - 100*ms, name: "late1", want: true}, {at: 2*w - 100*ms, name: "late2", want: true},
		{at: 2*w - 100*ms, name: "late3", want: false},
	}
	times := playLogins(t, h, steps)
	require.Equal(t, 5, chargedIn(times, w, w), "the window from 1:00")
}

// swlRefundChargedEntries: a refund drops the entry of the login it refunds, not the newest
// entries of the window, which other attempts made: in every interval of a minute, at most
// five attempts stay charged. Checked over every interval that starts at a charged
// attempt, which are the intervals that hold the most.
func swlRefundChargedEntries(t testing.TB, h harness) {
	s := time.Second
	steps := []login{
		{at: 0, name: "ok1", want: true},
		{at: s, name: "f1", want: true}, {at: s, name: "f2", want: true},
		{at: s, name: "f3", want: true}, {at: s, name: "f4", want: true},
		{at: 2 * s, name: "ok1", refund: true}, // drops ok1's entry at 0, not f4's
		{at: 3 * s, name: "f5", want: true},
		{at: 60 * s, name: "f6", want: false}, // f1..f5 are in (0 s, 60 s]
		{at: 61 * s, name: "f7", want: true},  // f1..f4, exactly a minute old, have left
		{at: 62 * s, name: "ok2", want: true},
		{at: 62*s + 500*ms, name: "f8", want: true}, {at: 62*s + 500*ms, name: "f9", want: true},
		{at: 63 * s, name: "ok2", refund: true},
		{at: 64 * s, name: "f10", want: true},
		{at: 122 * s, name: "f11", want: true}, // f7 has left; f8, f9, f10 remain
		{at: 122*s + 100*ms, name: "f12", want: true},
		{at: 122*s + 200*ms, name: "f13", want: false},
	}
	times := playLogins(t, h, steps)
	for _, from := range times {
		require.LessOrEqual(t, chargedIn(times, from, time.Minute), 5, "the minute from %v", from)
	}
}

// swlRefundAfterWindow: a refund whose entries have left the window gives nothing back,
// even when the window holds entries of the same count made later.
func swlRefundAfterWindow(t testing.TB, h harness) {
	s := time.Second
	steps := []login{
		{at: 0, name: "slow", want: true},
		{at: 30 * s, name: "f1", want: true}, {at: 30 * s, name: "f2", want: true},
		{at: 30 * s, name: "f3", want: true}, {at: 30 * s, name: "f4", want: true},
		{at: 61 * s, name: "f5", want: true},
		{at: 61 * s, name: "slow", refund: true}, // its entry at 0 has left: nothing
		{at: 61 * s, name: "f6", want: false},
	}
	times := playLogins(t, h, steps)
	for _, from := range times {
		require.LessOrEqual(t, chargedIn(times, from, time.Minute), 5, "the minute from %v", from)
	}
}
