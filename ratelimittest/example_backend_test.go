package ratelimittest_test

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// gcra is the smallest backend a third party could write: a token bucket (GCRA) in a map
// under a mutex, with the clock as a function. Its arithmetic is the local backend's: the
// theoretical arrival time (TAT) of each bucket, in tokens since 2020-01-01, on whole
// microseconds. With chargeDenials set it is wrong: a denied request still takes its tokens.
type gcra struct {
	now           func() time.Time
	chargeDenials bool

	mu     sync.Mutex
	tats   map[string]float64
	closed bool
}

const epochUS = 1577836800 * 1_000_000 // 2020-01-01 in Unix µs
const maxUS = 1 << 53

func (g *gcra) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return g.AllowN(ctx, key, limit, 1)
}

func (g *gcra) AllowN(_ context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	res := ratelimit.Result{Limit: limit}
	if err := check(key, limit, n); err != nil {
		return res, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return res, ratelimit.ErrClosed
	}
	at := g.now().Truncate(time.Microsecond)
	us := at.UnixMicro() - epochUS
	now := float64(us) * limit.Rate / 1e6 // the clock, in tokens
	// the one algorithm: a limit naming it is the limit naming none
	named := limit
	named.Algorithm = ratelimit.DefaultAlgorithm
	bucket := key + "\x00" + named.String()
	tat := max(g.tats[bucket], now) // a TAT in the past is a full bucket
	room := float64(limit.Burst - n)
	if ahead := tat - now; ahead > room {
		res.Remaining = max(int(float64(limit.Burst)-ahead), 0)
		res.RetryAfter = micros(max(retry(us, limit.Rate, tat, ahead, room), 1))
		res.ResetAfter = micros(toMicros(ahead, limit.Rate))
		if g.chargeDenials {
			g.tats[bucket] = tat + float64(n)
		}
		return res, nil
	}
	g.tats[bucket] = tat + float64(n)
	ahead := tat + float64(n) - now
	res.Allowed = true
	res.Remaining = max(int(float64(limit.Burst)-ahead), 0)
	res.ResetAfter = micros(toMicros(ahead, limit.Rate))
	res.Charge = ratelimit.Charge{At: at.UTC()}
	return res, nil
}

// check refuses what every backend refuses, and what a token bucket on a µs clock cannot
// hold: a refill shorter than 1 µs or longer than 2^53 µs, a warm-up, and another algorithm.
func check(key string, limit ratelimit.Limit, n int) error {
	switch {
	case key == "":
		return ratelimit.ErrInvalidArgument
	case len(key) > args.MaxKeyLen:
		return ratelimit.ErrInvalidArgument
	}
	if err := limit.Validate(); err != nil {
		return err
	}
	switch refill := float64(limit.Burst) / limit.Rate * 1e6; {
	case limit.Warmup != 0, limit.Algorithm != ratelimit.DefaultAlgorithm && limit.Algorithm != ratelimit.TokenBucket:
		return ratelimit.ErrNotSupported
	case refill < 1 || refill > maxUS:
		return ratelimit.ErrInvalidArgument
	case n < 1:
		return ratelimit.ErrInvalidArgument
	case n > limit.Burst:
		return ratelimit.ErrExceedsBurst
	}
	return nil
}

// retry is the least whole µs at which the request fits, corrected for float rounding.
func retry(us int64, rate, tat, ahead, room float64) int64 {
	r := toMicros(ahead-room, rate)
	for i := 0; i < 3 && r < maxUS; i++ {
		if tat-float64(us+r)*rate/1e6 <= room {
			break
		}
		r++
	}
	return r
}

func toMicros(tokens, rate float64) int64 { return int64(math.Min(tokens*1e6/rate+0.5, maxUS)) }
func micros(us int64) time.Duration       { return time.Duration(us) * time.Microsecond }

func (g *gcra) Wait(context.Context, string, ratelimit.Limit) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ratelimit.ErrClosed
	}
	return ratelimit.ErrNotSupported
}

func (g *gcra) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	return nil
}

// harness describes gcra to the suite: the token bucket only, on the suite's clock.
func harness(chargeDenials bool) ratelimittest.Harness {
	return ratelimittest.Harness{
		New: func(t testing.TB, c ratelimittest.Config) ratelimit.Limiter {
			g := &gcra{now: c.Clock.Now, chargeDenials: chargeDenials, tats: map[string]float64{}}
			t.Cleanup(func() { g.Close() })
			return g
		},
		Algorithms: []ratelimit.Algorithm{ratelimit.TokenBucket},
	}
}

// TestExampleBackend: the map-and-mutex token bucket passes every rule that applies to it.
func TestExampleBackend(t *testing.T) {
	ratelimittest.Run(t, harness(false))
}

// TestExampleBackendWrong: the same bucket that charges denied requests breaks the contract,
// and the suite says where: the seed timeline, whose third request is denied and must take
// nothing, and the rule that a denial takes nothing. Check reports it without failing the
// test; the right bucket gives Check nothing to report.
func TestExampleBackendWrong(t *testing.T) {
	require.NoError(t, ratelimittest.Check(t, harness(false)))
	err := ratelimittest.Check(t, harness(true))
	require.Error(t, err)
	for _, rule := range []string{"TokenBucket/WorkedExample: ", "TokenBucket/DenialTakesNothing: "} {
		require.Contains(t, err.Error(), rule)
	}
	require.NotContains(t, err.Error(), "TokenBucket/InvalidInput: ", "bad input is refused before any charge")
}

// TestExampleBackendUncontrolled: on a clock no test moves (here the system clock, as a
// database server's would be), the rules that hold whatever the clock does still run.
func TestExampleBackendUncontrolled(t *testing.T) {
	h := harness(false)
	h.Clock = ratelimittest.ClockUncontrolled
	newOnClock := h.New
	h.New = func(t testing.TB, c ratelimittest.Config) ratelimit.Limiter {
		g := newOnClock(t, c).(*gcra)
		g.now = time.Now
		return g
	}
	ratelimittest.Run(t, h)
}
