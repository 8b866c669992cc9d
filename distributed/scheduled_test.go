package distributed_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// scheduledStep is one call of a scheduled-admission row: after advancing the clock by
// after, at priority prio, a Reserve of n within maxWait (with allow, a plain AllowN of n;
// with cancel, a Refund of step cancel's booking, 1-based, its n tokens at its Charge), and
// what it must answer: booked with Delay delay, or not with RetryAfter retry, or err.
type scheduledStep struct {
	after   time.Duration
	prio    priority.Level
	n       int
	maxWait time.Duration
	allow   bool
	cancel  int
	booked  bool
	delay   time.Duration
	retry   time.Duration
	err     error
}

// scheduledRow is one scenario on a fresh bucket of limit, on a limiter of its own.
type scheduledRow struct {
	name  string
	limit ratelimit.Limit
	steps []scheduledStep
}

// playScheduled plays each row on server, with a clock of its own that the script reads in
// place of Redis TIME (the clock stands still between steps).
func playScheduled(t *testing.T, rows []scheduledRow, opts ...distributed.Option) {
	t.Helper()
	client := newClient(t, redistest.NewServer(t).Addr())
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			clock := ratelimittest.NewClock()
			l := newLimiter(t, client, clock, opts...)
			charges := make([]ratelimit.Charge, len(row.steps))
			for i, s := range row.steps {
				clock.Advance(s.after)
				ctx := priority.With(context.Background(), s.prio)
				var res ratelimit.Result
				var err error
				switch {
				case s.cancel > 0:
					_, err = l.Refund(ctx, "k", row.limit, row.steps[s.cancel-1].n, charges[s.cancel-1])
					require.NoError(t, err, "step %d", i+1)
					continue
				case s.allow:
					res, err = l.AllowN(ctx, "k", row.limit, s.n)
				default:
					res, err = l.Reserve(ctx, "k", row.limit, s.n, s.maxWait)
				}
				if s.err != nil {
					require.ErrorIs(t, err, s.err, "step %d", i+1)
					continue
				}
				require.NoError(t, err, "step %d", i+1)
				require.Equal(t, s.booked, res.Allowed, "step %d: Allowed", i+1)
				charges[i] = res.Charge
				if s.booked {
					require.Equal(t, s.delay, res.Delay, "step %d: Delay", i+1)
					require.Equal(t, time.Duration(0), res.RetryAfter, "step %d: RetryAfter", i+1)
					require.False(t, res.Charge.At.IsZero(), "step %d: a booking is a charge", i+1)
				} else {
					require.Equal(t, s.retry, res.RetryAfter, "step %d: RetryAfter", i+1)
					require.Equal(t, time.Duration(0), res.Delay, "step %d: Delay", i+1)
				}
			}
		})
	}
}

// TestScheduledAdmission ports the scenarios of gubernator v2.21.0's TestScheduledAdmission*
// (ADR 0005: the owner charges now, the bucket goes into debt, the caller is told "go now",
// "go in N ms" or "never in time") to the Redis backend, in our own rows and units. Every
// value follows from Rate and Burst on the script's clock: at 10/s a token is 100 ms; on a
// token bucket n tokens conform when the TAT less Burst has caught up (the Delay), on a
// leaky bucket a booking waits its turn in the outflow; a booking is refused past the
// ceiling, Burst tokens in debt (a TAT more than 2·Burst tokens ahead), whatever maxWait.
//
// Where the semantics part (the rows say which):
//   - gubernator books on its leaky bucket only; here the token bucket books too (its rows
//     are ours alone in their Delays: a full token bucket's Burst goes now, not in turn).
//   - gubernator has no cancel; here a Refund of the booking's Charge gives its slot back.
//   - gubernator refuses GLOBAL behaviour; here one Redis key is the one timeline, also
//     under a Redis Cluster (TestReserveCluster).
//   - gubernator's ceiling is a server setting; here it is Burst tokens in debt.
//   - n > Burst is ErrExceedsBurst here, an error rather than a refusal.
func TestScheduledAdmission(t *testing.T) {
	tb := func(rate float64, burst int) ratelimit.Limit { return ratelimit.Limit{Rate: rate, Burst: burst} }
	lb := func(rate float64, burst int) ratelimit.Limit {
		return ratelimit.Limit{Rate: rate, Burst: burst, Algorithm: ratelimit.LeakyBucket}
	}
	playScheduled(t, []scheduledRow{
		// The worked example on the leaky bucket, gubernator's algorithm: a booking's Delay
		// is its turn; maxWait 0 takes "go now" only; a turn past maxWait is refused with the
		// turn it would have had; 300 ms on, the queue has drained 3 tokens.
		{"worked example, leaky bucket", lb(10, 5), []scheduledStep{
			{n: 1, booked: true},
			{n: 1, retry: 100 * ms},
			{n: 1, maxWait: 100 * ms, booked: true, delay: 100 * ms},
			{n: 3, maxWait: time.Second, booked: true, delay: 200 * ms},
			{n: 1, maxWait: 400 * ms, retry: 500 * ms},
			{after: 300 * ms, n: 1, maxWait: 200 * ms, booked: true, delay: 200 * ms},
		}},
		// The same on the token bucket (ours alone): the Burst goes now, then each token
		// waits for its refill: 1 token 100 ms on, 2 more 300 ms on, a fourth at 400 ms.
		{"worked example, token bucket", tb(10, 5), []scheduledStep{
			{n: 5, booked: true},
			{n: 1, maxWait: time.Second, booked: true, delay: 100 * ms},
			{n: 2, maxWait: time.Second, booked: true, delay: 300 * ms},
			{n: 1, maxWait: 200 * ms, retry: 400 * ms},
			{after: 300 * ms, n: 1, maxWait: 100 * ms, booked: true, delay: 100 * ms},
		}},
		// Boundary: a maxWait equal to the wait books.
		{"boundary, maxWait equals the wait", tb(10, 1), []scheduledStep{
			{n: 1, booked: true},
			{n: 1, maxWait: 100 * ms, booked: true, delay: 100 * ms},
		}},
		// Boundary: 1 µs short is refused, and charges nothing: asked again, the same.
		{"boundary, 1 µs short charges nothing", tb(10, 1), []scheduledStep{
			{n: 1, booked: true},
			{n: 1, maxWait: 100*ms - us, retry: 100 * ms},
			{n: 1, maxWait: 100*ms - us, retry: 100 * ms},
			{n: 1, maxWait: 100 * ms, booked: true, delay: 100 * ms},
		}},
		// Boundary on the µs: at 3/s a token is 333333.3 µs; waits leave as the nearest µs,
		// and maxWait is compared with that.
		{"boundary, waits to the nearest µs", tb(3, 3), []scheduledStep{
			{n: 3, booked: true},
			{n: 1, maxWait: time.Second, booked: true, delay: 333333 * us},
			{n: 1, maxWait: 666666 * us, retry: 666667 * us},
			{n: 1, maxWait: 666667 * us, booked: true, delay: 666667 * us},
			{n: 1, maxWait: time.Second, booked: true, delay: time.Second},
		}},
		// Ceiling: the bucket may go exactly Burst tokens into debt (5 booked on an empty
		// bucket of Burst 5); one more is refused with the wait it would have needed, 600
		// ms, even under an hour's maxWait; 100 ms later it fits.
		{"ceiling, exactly Burst in debt", tb(10, 5), []scheduledStep{
			{n: 5, booked: true},
			{n: 5, maxWait: time.Hour, booked: true, delay: 500 * ms},
			{n: 1, maxWait: time.Hour, retry: 600 * ms},
			{after: 100 * ms, n: 1, maxWait: time.Hour, booked: true, delay: 500 * ms},
		}},
		// Ceiling, not maxWait, refuses: a maxWait equal to the wait does not book past it.
		{"ceiling refuses within maxWait", tb(10, 2), []scheduledStep{
			{n: 2, booked: true},
			{n: 2, maxWait: time.Hour, booked: true, delay: 200 * ms},
			{n: 1, maxWait: 300 * ms, retry: 300 * ms},
			{n: 1, maxWait: time.Hour, retry: 300 * ms},
		}},
		// Ceiling on the leaky bucket: turns up to 2·Burst tokens ahead.
		{"ceiling, leaky bucket", lb(10, 2), []scheduledStep{
			{n: 2, booked: true},
			{n: 2, maxWait: time.Second, booked: true, delay: 200 * ms},
			{n: 1, maxWait: time.Hour, retry: 400 * ms},
		}},
		// Never fits: more than Burst tokens (an error here, a refusal there), charging
		// nothing; Burst itself fits.
		{"never fits, token bucket", tb(10, 5), []scheduledStep{
			{n: 6, maxWait: time.Hour, err: ratelimit.ErrExceedsBurst},
			{n: 5, booked: true},
		}},
		{"never fits, leaky bucket", lb(10, 5), []scheduledStep{
			{n: 6, maxWait: time.Hour, err: ratelimit.ErrExceedsBurst},
			{n: 5, booked: true},
		}},
		// Never in time: a slot beyond maxWait is refused each time, with the same wait, as
		// nothing was charged; once the clock brings it within maxWait, it books.
		{"never in time", tb(10, 1), []scheduledStep{
			{n: 1, booked: true},
			{n: 1, maxWait: 50 * ms, retry: 100 * ms},
			{n: 1, maxWait: 50 * ms, retry: 100 * ms},
			{after: 50 * ms, n: 1, maxWait: 50 * ms, booked: true, delay: 50 * ms},
		}},
		// Spacing: bookings on an empty bucket come exactly 1/Rate apart, n/Rate for n tokens.
		{"spacing, token bucket", tb(10, 8), []scheduledStep{
			{n: 8, booked: true},
			{n: 1, maxWait: time.Second, booked: true, delay: 100 * ms},
			{n: 1, maxWait: time.Second, booked: true, delay: 200 * ms},
			{n: 2, maxWait: time.Second, booked: true, delay: 400 * ms},
			{n: 1, maxWait: time.Second, booked: true, delay: 500 * ms},
		}},
		{"spacing, leaky bucket", lb(10, 4), []scheduledStep{
			{n: 1, maxWait: time.Second, booked: true},
			{n: 1, maxWait: time.Second, booked: true, delay: 100 * ms},
			{n: 2, maxWait: time.Second, booked: true, delay: 200 * ms},
			{n: 1, maxWait: time.Second, booked: true, delay: 400 * ms},
			{n: 1, maxWait: time.Second, booked: true, delay: 500 * ms},
		}},
		// Spacing holds as the clock moves: slots at 100 ms and 200 ms on the clock, asked
		// for at 30 ms and 60 ms.
		{"spacing as time passes", tb(10, 2), []scheduledStep{
			{n: 2, booked: true},
			{after: 30 * ms, n: 1, maxWait: time.Second, booked: true, delay: 70 * ms},
			{after: 30 * ms, n: 1, maxWait: time.Second, booked: true, delay: 140 * ms},
		}},
		// Plain requests on a key in debt are refused, with the wait until the debt allows
		// them, and charge nothing; once it is waited out, they pass.
		{"plain requests in debt, token bucket", tb(10, 2), []scheduledStep{
			{n: 2, booked: true},
			{n: 1, maxWait: time.Second, booked: true, delay: 100 * ms},
			{n: 1, allow: true, retry: 200 * ms},
			{n: 1, allow: true, retry: 200 * ms},
			{after: 100 * ms, n: 1, allow: true, retry: 100 * ms},
			{after: 100 * ms, n: 1, allow: true, booked: true},
		}},
		// On the leaky bucket a plain request takes a turn up to Burst ahead, as it always
		// does; in debt, it is refused.
		{"plain requests in debt, leaky bucket", lb(10, 2), []scheduledStep{
			{n: 1, booked: true},
			{n: 1, maxWait: time.Second, booked: true, delay: 100 * ms},
			{n: 1, maxWait: time.Second, booked: true, delay: 200 * ms},
			{n: 1, allow: true, retry: 200 * ms},
			{after: 200 * ms, n: 1, allow: true, booked: true, delay: 100 * ms},
		}},
		// Cancel (ours alone): a Refund of a booking's Charge gives its tokens back, and the
		// next caller books the freed slot; a plain request's wait shrinks alike.
		{"cancel frees the slot", tb(10, 2), []scheduledStep{
			{n: 2, booked: true},
			{n: 1, maxWait: time.Second, booked: true, delay: 100 * ms},
			{n: 1, maxWait: time.Second, booked: true, delay: 200 * ms},
			{cancel: 3},
			{n: 1, allow: true, retry: 200 * ms},
			{cancel: 2},
			{n: 1, allow: true, retry: 100 * ms},
			{n: 1, maxWait: time.Second, booked: true, delay: 100 * ms},
		}},
		// Cancel of an earlier booking (ours alone): the TAT keeps no trace of whose tokens
		// they were, so the freed time goes to the next caller, whose turn is then that of the
		// booking after the cancelled one (200 ms, twice); the slots of bookings already made
		// do not move (docs/limits.md: a refund cannot undo the Delay given meanwhile).
		{"cancel of an earlier booking, leaky bucket", lb(10, 2), []scheduledStep{
			{n: 1, booked: true},
			{n: 1, maxWait: time.Second, booked: true, delay: 100 * ms},
			{n: 1, maxWait: time.Second, booked: true, delay: 200 * ms},
			{cancel: 2},
			{n: 1, maxWait: time.Second, booked: true, delay: 200 * ms},
			{n: 1, maxWait: time.Second, booked: true, delay: 300 * ms},
		}},
		// An idle bucket refills to Burst and no further: no credit to book ahead with.
		{"idle refills to Burst only", tb(10, 2), []scheduledStep{
			{n: 2, booked: true},
			{after: time.Hour, n: 2, booked: true},
			{n: 1, retry: 100 * ms},
		}},
	})
}

// TestScheduledAdmissionConcurrent: gubernator's concurrent callers, on the Redis backend.
// Twenty callers at one instant each book 1 token within 10 s on a bucket of 10/s, Burst 8:
// the script decides each alone, so exactly 16 book (to the ceiling, 8 in debt), each a slot
// of its own, and 4 are refused with the wait past the ceiling. On the token bucket 8 go now
// and 8 at 100 ms … 800 ms; on the leaky bucket the 16 turns are 0 … 1.5 s.
func TestScheduledAdmissionConcurrent(t *testing.T) {
	client := newClient(t, redistest.NewServer(t).Addr())
	for _, c := range []struct {
		alg    ratelimit.Algorithm
		delays []time.Duration // the bookings', sorted
		retry  time.Duration
	}{
		{ratelimit.TokenBucket, []time.Duration{0, 0, 0, 0, 0, 0, 0, 0,
			100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms, 600 * ms, 700 * ms, 800 * ms}, 900 * ms},
		{ratelimit.LeakyBucket, []time.Duration{0, 100 * ms, 200 * ms, 300 * ms, 400 * ms, 500 * ms,
			600 * ms, 700 * ms, 800 * ms, 900 * ms, 1000 * ms, 1100 * ms, 1200 * ms, 1300 * ms,
			1400 * ms, 1500 * ms}, 1600 * ms},
	} {
		t.Run(c.alg.String(), func(t *testing.T) {
			l := newLimiter(t, client, ratelimittest.NewClock())
			limit := ratelimit.Limit{Rate: 10, Burst: 8, Algorithm: c.alg}
			results := make([]ratelimit.Result, 20)
			var wg sync.WaitGroup
			for i := range results {
				wg.Go(func() {
					res, err := l.Reserve(context.Background(), "k", limit, 1, 10*time.Second)
					require.NoError(t, err)
					results[i] = res
				})
			}
			wg.Wait()
			var delays []time.Duration
			for _, res := range results {
				if res.Allowed {
					delays = append(delays, res.Delay)
				} else {
					require.Equal(t, c.retry, res.RetryAfter)
				}
			}
			slices.Sort(delays)
			require.Equal(t, c.delays, delays)
		})
	}
}

// TestScheduledAdmissionPriority: reserve × priority reserves × warm-up (issue 40's cross-
// feature rows). 10/s, Burst 10, the default reserves: Normal requests leave 1 token back,
// Sheddable ones 5. A booking of priority p is decided as on a bucket of usable = Burst less
// p's reserve: on the token bucket its tokens conform when the TAT less usable has caught up
// (so a Sheddable slot comes later than a Critical one on the same TAT), and on both buckets
// the ceiling is usable + Burst tokens ahead (Burst less p's reserve in debt: the reserve is
// kept in the debt too). More than usable tokens is ErrExceedsBurst. A token bucket with a
// Warmup books nothing, whatever the priority (ErrNotSupported; n > Burst is refused first).
func TestScheduledAdmissionPriority(t *testing.T) {
	const c, n, s = priority.Critical, priority.Normal, priority.Sheddable
	limit := ratelimit.Limit{Rate: 10, Burst: 10}
	leaky := ratelimit.Limit{Rate: 10, Burst: 10, Algorithm: ratelimit.LeakyBucket}
	warm := ratelimit.Limit{Rate: 10, Burst: 10, Warmup: time.Minute}
	playScheduled(t, []scheduledRow{
		{"token bucket", limit, []scheduledStep{
			{prio: s, n: 6, maxWait: time.Hour, err: ratelimit.ErrExceedsBurst},
			{prio: n, n: 10, maxWait: time.Hour, err: ratelimit.ErrExceedsBurst},
			{prio: s, n: 5, booked: true},
			{prio: s, n: 1, retry: 100 * ms},
			{prio: c, n: 1, booked: true},
			{prio: s, n: 5, maxWait: time.Hour, booked: true, delay: 600 * ms},
			{prio: s, n: 4, maxWait: time.Hour, booked: true, delay: time.Second},
			{prio: s, n: 1, maxWait: time.Hour, retry: 1100 * ms}, // Sheddable's ceiling
			{prio: s, n: 1, allow: true, retry: 1100 * ms},
			{prio: n, n: 1, maxWait: 700*ms - us, retry: 700 * ms},
			{prio: n, n: 4, maxWait: time.Hour, booked: true, delay: 1000 * ms},
			{prio: n, n: 1, maxWait: time.Hour, retry: 1100 * ms}, // Normal's ceiling
			{prio: c, n: 1, maxWait: time.Hour, booked: true, delay: time.Second},
			{prio: c, n: 1, maxWait: time.Hour, retry: 1100 * ms}, // Critical's ceiling
		}},
		// The leaky bucket's Delay is the turn, the same for every priority; the priority
		// bounds how far ahead it may book.
		{"leaky bucket", leaky, []scheduledStep{
			{prio: s, n: 6, maxWait: time.Hour, err: ratelimit.ErrExceedsBurst},
			{prio: s, n: 5, booked: true},
			{prio: s, n: 1, retry: 500 * ms},
			{prio: s, n: 5, maxWait: time.Hour, booked: true, delay: 500 * ms},
			{prio: s, n: 5, maxWait: time.Hour, booked: true, delay: time.Second},
			{prio: s, n: 1, maxWait: time.Hour, retry: 1500 * ms},
			{prio: n, n: 4, maxWait: time.Hour, booked: true, delay: 1500 * ms},
			{prio: n, n: 1, maxWait: time.Hour, retry: 1900 * ms},
			{prio: c, n: 1, maxWait: time.Hour, booked: true, delay: 1900 * ms},
			{prio: c, n: 1, maxWait: time.Hour, retry: 2000 * ms},
		}},
		{"warm-up", warm, []scheduledStep{
			{prio: c, n: 1, err: ratelimit.ErrNotSupported},
			{prio: n, n: 1, err: ratelimit.ErrNotSupported},
			{prio: s, n: 6, maxWait: time.Hour, err: ratelimit.ErrNotSupported},
			{prio: s, n: 11, err: ratelimit.ErrExceedsBurst},
			{prio: c, n: 1, allow: true, booked: true}, // AllowN takes a warm-up as ever
		}},
	}, distributed.WithReserves(priority.Reserves{}))
}
