package local

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/wait"
)

// tokenEpochUS is the zero of the leaky bucket's token clock, 2020-01-01T00:00:00Z in Unix
// microseconds: the Redis script's, so that both backends do the very same floating-point
// arithmetic and give the same answers to the microsecond.
const tokenEpochUS = 1577836800 * 1_000_000

// maxUS caps the durations a shaper returns at 2^53 µs (285 years), as the script does.
const maxUS = 1 << 53

// leakyBucket is the state of a ratelimit.LeakyBucket bucket: a queue of Burst places
// drained at Rate, kept as GCRA's virtual schedule. It makes the token bucket's decisions
// and tells each admitted request when its turn comes.
//
// Time is counted in tokens, as in the Redis script (distributed/leakybucket.lua): a
// microsecond is worth Rate/10⁶ of a token, so the emission interval T is exactly 1 and a
// request of n tokens moves the schedule by exactly n, at any rate, with no drift. The
// clock stays below 2⁵³ tokens until 2305 at the highest rate allowed (MaxShapingRate).
type leakyBucket struct {
	mu sync.Mutex
	// tat is the theoretical arrival time: when the queue is empty again, in tokens since
	// tokenEpochUS. −∞ for a bucket never used.
	tat float64
}

func newLeakyBucket(ratelimit.Limit) state {
	return &leakyBucket{tat: math.Inf(-1)}
}

// full reports whether the queue is empty at t. Asked about a time before an admission,
// it is not: the admission pushed tat past that time.
func (lb *leakyBucket) full(limit ratelimit.Limit, t time.Time) bool {
	_, clock := tokenClock(t, limit.Rate)
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.tat <= clock
}

func (lb *leakyBucket) take(limit ratelimit.Limit, now time.Time, n int) ratelimit.Result {
	return lb.reserve(limit, now, n, unbounded)
}

// reserve decides n tokens at now. With T = 1/Rate and τ = Burst·T, the request's first
// token leaves at start = max(tat, now), its last at start + n·T; it is allowed when that is
// at most τ ahead of now, and then waits Delay = start − now, to the nearest microsecond.
// In tokens the test is start − now ≤ Burst − n, as in the script: Burst − n is exact, where
// the sum start + n would round near Burst = 2^52 and admit a request right after a drain.
func (lb *leakyBucket) reserve(limit ratelimit.Limit, now time.Time, n int, maxDelay time.Duration) ratelimit.Result {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	res, next := lb.decide(limit, now, n, maxDelay)
	if res.Allowed {
		lb.tat = next
	}
	return res
}

func (lb *leakyBucket) peek(limit ratelimit.Limit, now time.Time, n int) ratelimit.Result {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	res, _ := lb.decide(limit, now, n, unbounded)
	return res
}

// refund frees n places: the schedule moves back by n tokens. A schedule that ends before
// now is an empty queue, as new.
func (lb *leakyBucket) refund(_ ratelimit.Limit, _ time.Time, n int) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lb.tat -= float64(n)
}

// decide is reserve's decision, and the schedule to keep if it is allowed; it changes
// nothing. The caller holds lb.mu.
func (lb *leakyBucket) decide(limit ratelimit.Limit, now time.Time, n int, maxDelay time.Duration) (ratelimit.Result, float64) {
	us, clock := tokenClock(now, limit.Rate)
	burst := float64(limit.Burst)
	room := float64(limit.Burst - n)
	start := max(lb.tat, clock)
	if start-clock > room {
		// Denied: a place for n tokens frees up when the clock has caught up start − room.
		return ratelimit.Result{
			Remaining:  queueRoom(burst, start-clock),
			RetryAfter: microseconds(max(untilUS(us, limit.Rate, clock, start, room), 1)),
			ResetAfter: microseconds(tokensToUS(start-clock, limit.Rate)),
		}, lb.tat
	}
	next := start + float64(n)
	// The nearest microsecond, as ResetAfter: the next request's Delay is this one's
	// ResetAfter, and departures are T apart give or take one rounding.
	delay := tokensToUS(start-clock, limit.Rate)
	if maxDelay != unbounded && delay > maxDelay.Microseconds() {
		// Wait's reservation: the turn would come after the caller's deadline.
		return ratelimit.Result{
			Remaining:  queueRoom(burst, start-clock),
			ResetAfter: microseconds(tokensToUS(start-clock, limit.Rate)),
			Delay:      microseconds(delay),
		}, lb.tat
	}
	return ratelimit.Result{
		Allowed:    true,
		Remaining:  queueRoom(burst, next-clock),
		ResetAfter: microseconds(tokensToUS(next-clock, limit.Rate)),
		Delay:      microseconds(delay),
	}, next
}

// tokenClock reads t as whole microseconds since tokenEpochUS, and in tokens.
func tokenClock(t time.Time, rate float64) (us int64, tokens float64) {
	us = t.UnixMicro() - tokenEpochUS
	return us, float64(us) * rate / 1e6
}

// untilUS returns the first whole microsecond after us (whose token clock reads clock) at
// which start − clock ≤ room: the nearest, stepped forward while this same arithmetic says
// it is short, so that a caller coming back then is admitted; start − clock > room.
func untilUS(us int64, rate, clock, start, room float64) int64 {
	d := tokensToUS(start-clock-room, rate)
	for i := 0; i < 3 && d < maxUS; i++ {
		if start-float64(us+d)*rate/1e6 <= room {
			break
		}
		d++
	}
	return d
}

// tokensToUS converts a number of tokens to the nearest whole microsecond, capped at maxUS.
func tokensToUS(tokens, rate float64) int64 {
	return int64(math.Min(math.Floor(tokens*1e6/rate+0.5), maxUS))
}

// queueRoom returns the whole places left in a queue of burst places when its backlog is
// ahead tokens long.
func queueRoom(burst, ahead float64) int {
	return int(max(math.Floor(burst-ahead), 0))
}

func microseconds(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// waitInQueue is Wait for ratelimit.LeakyBucket: see Wait.
func (l *Limiter) waitInQueue(ctx context.Context, key string, limit ratelimit.Limit) error {
	return wait.Queue(ctx, func(ctx context.Context, maxDelay time.Duration, bounded bool) (ratelimit.Result, error) {
		named, _, err := l.validate(key, limit, 1)
		if err != nil {
			return ratelimit.Result{Limit: limit}, err
		}
		reserve, err := l.reserve(ctx, limit, 1)
		if err != nil {
			return ratelimit.Result{Limit: limit}, err
		}
		if !bounded {
			maxDelay = unbounded
		}
		res := l.store.decide(key, named, l.now(), 1, reserve, maxDelay)
		res.Limit = limit
		return res, nil
	}, l.stop)
}
