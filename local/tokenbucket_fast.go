package local

import (
	"sync/atomic"
	"time"

	"github.com/sluice-go/ratelimit"
)

// Token buckets faster than scriptMaxRate, which only this backend accepts. There a token is
// worth less than a microsecond, and a float64 token clock since tokenEpochUS would pass
// 2⁵³ tokens, where it stops counting single tokens, within years at 10⁷ a second and
// within days at 10¹⁰.
//
// Up to casMaxRate a bucket is still GCRA on one word, in whole tokens: the clock reading u
// is worth (u − tokenEpochUS)·Rate/10⁶ tokens, truncated to an int64 that holds every
// reading up to the year 2305 at 10⁹ a second, and the TAT is an int64 of tokens, so that a
// request moves it by exactly its cost. The clock's truncation to a whole token is less than
// a microsecond, and is not carried from one decision to the next. No script shares this
// arithmetic, so the clock multiplies by Rate·10⁻⁶ where the script's divides by 10⁶: any
// clock that never runs backwards will do.
//
// Above casMaxRate a bucket keeps the tokens it held at its last decision and when that
// was (fastTokens), as golang.org/x/time/rate does, under its mutex: that count never
// exceeds Burst, at any rate and for ever.

// casMaxRate is the highest Rate whose token bucket decides with a compare-and-swap.
const casMaxRate = 1e9

// The word of a whole-token bucket is its TAT in offset binary, TAT + 2⁶³, so that a new
// bucket's word, 0, is a TAT far in the past, and deadWord a TAT no clock reaches.
const wholeOffset = 1 << 63

// wholeClock returns the token clock at us µs since tokenEpochUS: a product and a
// truncation, each never decreasing as us grows.
func wholeClock(us int64, rate float64) int64 {
	return int64(float64(us) * (rate * 1e-6))
}

// takeWholeGCRA decides n tokens at u (Unix µs) on the whole-token TAT in word, with one
// compare-and-swap. It reports false, having decided nothing, if the bucket is dead, and
// waits while an AllowAll holds it.
func takeWholeGCRA(word *atomic.Uint64, rate float64, capacity int, u int64, n int) (verdict, bool) {
	us := u - tokenEpochUS
	burst := int64(capacity)
	now := wholeClock(us, rate)
	for {
		old := word.Load()
		if old >= lockedWord { // held by an AllowAll, or dead: rare, and out of line
			var ok bool
			if old, ok = waitWord(word); !ok {
				return verdict{}, false
			}
		}
		tat := max(int64(old-wholeOffset), now)
		next := tat + int64(n)
		if next-now > burst {
			ahead := tat - now
			return verdict{
				remaining: int(burst - ahead),
				retry:     micros(wholeRetry(us, rate, now, next-burst)),
				reset:     micros(gcraMicros(float64(ahead), rate)),
			}, true
		}
		if word.CompareAndSwap(old, uint64(next)+wholeOffset) {
			ahead := next - now
			return verdict{
				allowed:   true,
				remaining: int(burst - ahead),
				reset:     micros(gcraMicros(float64(ahead), rate)),
			}, true
		}
	}
}

// wholeRefund returns the whole-token TAT word old with n tokens given back at u, not
// before now.
func wholeRefund(old uint64, limit ratelimit.Limit, u int64, n int) uint64 {
	now := wholeClock(u-tokenEpochUS, limit.Rate)
	return uint64(max(int64(old-wholeOffset)-int64(n), now)) + wholeOffset
}

// wholeFull reports whether the whole-token TAT in word has passed at u.
func wholeFull(word uint64, limit ratelimit.Limit, u int64) bool {
	return int64(word-wholeOffset) <= wholeClock(u-tokenEpochUS, limit.Rate)
}

// wholeRetry returns when, in µs from us, the token clock (at now) reaches free: the nearest
// microsecond, then stepped forward while the clock says it is short; at least 1.
func wholeRetry(us int64, rate float64, now, free int64) int64 {
	retry := gcraMicros(float64(free-now), rate)
	for i := 0; i < 3 && retry < maxUS && wholeClock(us+retry, rate) < free; i++ {
		retry++
	}
	return max(retry, 1)
}

// fastTokens is the state of a token bucket faster than casMaxRate: the tokens it held at
// its last decision, and when that was. It decides under its bucket's mutex. The limit its
// methods are given may have a smaller Burst than the bucket's, burst: that of a request
// that must leave a reserve (see decideAt).
type fastTokens struct {
	tokens float64 // at last
	last   int64   // Unix µs
	burst  int
}

func newFastTokens(limit ratelimit.Limit, u int64) *fastTokens {
	return &fastTokens{tokens: float64(limit.Burst), last: u, burst: limit.Burst}
}

// at returns the tokens held at u, refilled at rate. A time before the last decision (only
// an injected clock goes back) reads as that decision's.
func (ft *fastTokens) at(rate float64, u int64) float64 {
	if u <= ft.last {
		return ft.tokens
	}
	return min(float64(ft.burst), ft.tokens+float64(u-ft.last)*rate/1e6)
}

func (ft *fastTokens) take(limit ratelimit.Limit, u int64, n int, _ time.Duration) (verdict, time.Duration) {
	v, tokens := ft.decide(limit, u, n)
	if v.allowed {
		ft.tokens, ft.last = tokens, max(u, ft.last)
	}
	return v, 0
}

func (ft *fastTokens) peek(limit ratelimit.Limit, u int64, n int) (verdict, time.Duration) {
	v, _ := ft.decide(limit, u, n)
	return v, 0
}

func (ft *fastTokens) refund(limit ratelimit.Limit, u, _ int64, n int) {
	ft.tokens, ft.last = min(float64(ft.burst), ft.at(limit.Rate, u)+float64(n)), max(u, ft.last)
}

// decide decides n tokens at u under limit, and returns the verdict and the tokens left if
// it is allowed. A limit whose Burst is smaller than the bucket's keeps the difference back.
func (ft *fastTokens) decide(limit ratelimit.Limit, u int64, n int) (verdict, float64) {
	keep := float64(ft.burst - limit.Burst)
	tokens, need := ft.at(limit.Rate, u), float64(n)+keep
	if tokens >= need {
		tokens -= float64(n)
		return verdict{
			allowed:   true,
			remaining: fastRemaining(tokens-keep, limit.Burst),
			reset:     micros(gcraMicros(float64(ft.burst)-tokens, limit.Rate)),
		}, tokens
	}
	// Denied, and nothing changes. The nearest microsecond at which the tokens needed are
	// there, stepped forward while at says they are not.
	retry := max(gcraMicros(need-tokens, limit.Rate), 1)
	for i := 0; i < 3 && retry < maxUS && ft.at(limit.Rate, max(u, ft.last)+retry) < need; i++ {
		retry++
	}
	return verdict{
		remaining: fastRemaining(tokens-keep, limit.Burst),
		retry:     micros(retry),
		reset:     micros(gcraMicros(float64(ft.burst)-tokens, limit.Rate)),
	}, tokens
}

func (ft *fastTokens) full(limit ratelimit.Limit, u int64) bool {
	return u >= ft.last && ft.at(limit.Rate, u) >= float64(ft.burst)
}

// fastRemaining rounds tokens down to whole tokens, within [0, burst].
func fastRemaining(tokens float64, burst int) int {
	if tokens <= 0 {
		return 0
	}
	return min(int(tokens), burst)
}

// takeToken decides n tokens at u on a token bucket's word, as takeGCRA does up to
// scriptMaxRate (the Redis backend's arithmetic) and as takeWholeGCRA does above it.
func takeToken(word *atomic.Uint64, rate float64, burst int, u int64, n int) (verdict, bool) {
	if rate <= scriptMaxRate {
		return takeGCRA(word, rate, burst, u, n)
	}
	return takeWholeGCRA(word, rate, burst, u, n)
}
