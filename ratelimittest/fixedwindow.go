package ratelimittest

import (
	"testing"
	"time"

	"github.com/sluice-go/ratelimit"
)

// fixedWindowRules are the rules of ratelimit.FixedWindow: windows of W = Burst/Rate aligned
// to the Unix epoch, at most Burst tokens each; a denial takes nothing; RetryAfter runs to
// the window's end, and so does ResetAfter while the window has counted anything.
//
// The timelines start at the harness clock's first reading, 2026-01-01T00:00:00Z: Unix
// 1,767,225,600 s, a multiple of 60 (and of most windows below), so window boundaries fall
// at round offsets from it.
var fixedWindowRules = []rule{
	{"BoundaryBurst", fwBoundaryBurst},
	{"WindowAlignment", fwWindowAlignment},
	{"DenialTakesNothing", fwDenialTakesNothing},
	{"AllowNIsAllOrNothing", fwAllowNIsAllOrNothing},
	{"BucketIdentity", fwBucketIdentity},
	{"AgainstModel", checkModelRule},
}

// fwBoundaryBurst is the fixed window's known weakness, pinned: Burst requests at the very end
// of one window and Burst at the start of the next all pass, 2×Burst within 2 ms.
func fwBoundaryBurst(t testing.TB, h harness) {
	limit := ratelimit.PerMinute(6) // W = 60 s
	var steps []step
	// 59.998 s: the first window's last 2 ms. Six pass; each leaves the window 2 ms to run.
	for i := range 6 {
		s := step{want: allowed(5-i, 2*ms)}
		if i == 0 {
			s.advance = 59998 * ms
		}
		steps = append(steps, s)
	}
	// The seventh waits for the next window, 2 ms away.
	steps = append(steps, step{want: denied(0, 2*ms, 2*ms)})
	// 60 s: a new window, counting from zero. Six more pass; it runs for a full minute.
	for i := range 6 {
		s := step{want: allowed(5-i, time.Minute)}
		if i == 0 {
			s.advance = 2 * ms
		}
		steps = append(steps, s)
	}
	steps = append(steps,
		// Now the wait is the whole window: to 120 s.
		step{want: denied(0, time.Minute, time.Minute)},
		step{advance: 59999 * ms, want: denied(0, ms, ms)},
		step{advance: ms, want: allowed(5, time.Minute)},
	)
	play(t, h, "edge", limit, steps)
}

// fwWindowAlignment: windows start at multiples of W since the Unix epoch, not at a bucket's
// first request, so every instance agrees on them.
func fwWindowAlignment(t testing.TB, h harness) {
	// W = 1 min, first request half a minute in: the window still ends on the minute.
	play(t, h, "minute", ratelimit.PerMinute(2), []step{
		{advance: 30 * time.Second, want: allowed(1, 30*time.Second)},
		{want: allowed(0, 30*time.Second)},
		{want: denied(0, 30*time.Second, 30*time.Second)},
		{advance: 29999 * ms, want: denied(0, ms, ms)},
		{advance: ms, want: allowed(1, time.Minute)},
	})
	// W = 11 s. The clock stands at Unix 1,767,225,660 s = 160,656,878 windows and 2 s: the
	// window ends 9 s from now, not 11.
	play(t, h, "eleven", ratelimit.Limit{Rate: 1.0 / 11, Burst: 1}, []step{
		{want: allowed(0, 9*time.Second)},
		{advance: 8999 * ms, want: denied(0, ms, ms)},
		{advance: ms, want: allowed(0, 11*time.Second)},
		{advance: 10999 * ms, want: denied(0, ms, ms)},
	})
}

// fwDenialTakesNothing: denials in a row leave the window's count as it was.
func fwDenialTakesNothing(t testing.TB, h harness) {
	limit := ratelimit.Limit{Rate: 10, Burst: 3} // W = 300 ms
	steps := []step{
		{want: allowed(2, 300*ms)},
		{want: allowed(1, 300*ms)},
		{want: allowed(0, 300*ms)},
	}
	for range 10 {
		steps = append(steps, step{want: denied(0, 300*ms, 300*ms)})
	}
	steps = append(steps,
		step{advance: 100 * ms, want: denied(0, 200*ms, 200*ms)},
		// The next window gives out all three again: the denials were never counted.
		step{advance: 200 * ms, n: 3, want: allowed(0, 300*ms)},
		step{want: denied(0, 300*ms, 300*ms)},
	)
	play(t, h, "deny", limit, steps)
}

// fwAllowNIsAllOrNothing: a request for more than the window has left takes nothing.
func fwAllowNIsAllOrNothing(t testing.TB, h harness) {
	play(t, h, "cost", ratelimit.Limit{Rate: 1, Burst: 5}, []step{ // W = 5 s
		{n: 3, want: allowed(2, 5*time.Second)},
		// 2 left, 3 asked: wait for the next window, though 2 remain.
		{n: 3, want: denied(2, 5*time.Second, 5*time.Second)},
		{n: 2, want: allowed(0, 5*time.Second)},
		{n: 5, want: denied(0, 5*time.Second, 5*time.Second)},
		{advance: 4 * time.Second, n: 1, want: denied(0, time.Second, time.Second)},
		{advance: time.Second, n: 5, want: allowed(0, 5*time.Second)},
	})
}

// fwBucketIdentity: a bucket is (key, Rate, Burst); changing any of them is another bucket.
func fwBucketIdentity(t testing.TB, h harness) {
	one := ratelimit.Limit{Rate: 1, Burst: 1} // W = 1 s
	play(t, h, "id", one, []step{
		{want: allowed(0, time.Second)},
		{want: denied(0, time.Second, time.Second)},
	})
	play(t, h, "id", ratelimit.Limit{Rate: 1, Burst: 2}, []step{{want: allowed(1, 2*time.Second)}})
	play(t, h, "id", ratelimit.Limit{Rate: 2, Burst: 1}, []step{{want: allowed(0, 500*ms)}})
	play(t, h, "id2", one, []step{{want: allowed(0, time.Second)}})
	// The first bucket kept its count through all of that.
	play(t, h, "id", one, []step{{want: denied(0, time.Second, time.Second)}})
}
