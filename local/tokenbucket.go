package local

import (
	"math"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluice-go/ratelimit"
)

// tokenBucket is the state of a ratelimit.TokenBucket bucket: an x/time/rate limiter, which
// does its own locking.
type tokenBucket rate.Limiter

func newTokenBucket(limit ratelimit.Limit) state {
	return (*tokenBucket)(rate.NewLimiter(rate.Limit(limit.Rate), limit.Burst))
}

func (tb *tokenBucket) full(limit ratelimit.Limit, t time.Time) bool {
	return (*rate.Limiter)(tb).TokensAt(t) >= float64(limit.Burst)
}

// take asks the bucket for n tokens at now and describes the outcome. Reading the tokens
// first lets a denial skip the bucket's decision.
func (tb *tokenBucket) take(limit ratelimit.Limit, now time.Time, n int) ratelimit.Result {
	lim := (*rate.Limiter)(tb)
	tokens := lim.TokensAt(now)
	if tokens >= float64(n) {
		if lim.AllowN(now, n) {
			left := tokens - float64(n)
			return ratelimit.Result{
				Allowed:    true,
				Remaining:  wholeTokens(left, limit.Burst),
				ResetAfter: durationOf((float64(limit.Burst) - left) / limit.Rate),
			}
		}
		// Another goroutine took the tokens between the two calls.
		tokens = lim.TokensAt(now)
	}
	return ratelimit.Result{
		Remaining:  wholeTokens(tokens, limit.Burst),
		RetryAfter: retryAfter(lim, now, tokens, n, limit.Rate),
		ResetAfter: durationOf((float64(limit.Burst) - tokens) / limit.Rate),
	}
}

// retryAfter returns when n tokens will be there. The bucket counts its tokens in floating
// point, so the exact quotient can land an ulp short of n; asking the bucket itself about the
// answer, and nudging it forward when needed, keeps the promise that a request made after
// RetryAfter is allowed (if nobody else used the bucket in between).
func retryAfter(b *rate.Limiter, now time.Time, tokens float64, n int, r float64) time.Duration {
	d := max(durationOf((float64(n)-tokens)/r), 1)
	for range 4 {
		step := 1 + d>>50
		if d > math.MaxInt64-step || b.TokensAt(now.Add(d)) >= float64(n) {
			break
		}
		d += step
	}
	return d
}

// wholeTokens rounds tokens down and clamps them to [0, burst]. Rounding down matches the
// bucket's own view: 0.9999 tokens admit nothing.
func wholeTokens(tokens float64, burst int) int {
	if tokens <= 0 {
		return 0
	}
	return min(int(tokens), burst)
}
