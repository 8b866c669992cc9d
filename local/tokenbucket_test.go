package local

import (
	"context"
	"encoding/binary"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/time/rate"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/ratelimittest"
)

// FuzzTokenBucketMatchesXRate drives the token bucket and a golang.org/x/time/rate limiter,
// the reference, with the same arrivals and costs, and requires the same decisions.
//
// The two count differently: the bucket in float64 tokens on a microsecond clock since 2020
// (the arithmetic of the Redis script), x/time/rate in float64 tokens refilled from
// nanosecond durations. Arrivals fall on whole microseconds, so both see the same instants,
// and where the exact answer is clear by more than a microsecond's worth of tokens they
// must agree. Exactly at a boundary (a request asking for the very tokens the bucket holds,
// to within Rate·1 µs), rounding of either may tip it: the documented sub-microsecond
// rounding (x/time/rate rounds its waits down to whole nanoseconds, so above 10⁹ a second it
// admits a request up to Rate·1 ns tokens short). After such a disagreement the two buckets
// no longer hold the same tokens, and the run goes on with a fresh pair on another key; the
// seeds below put requests on boundaries on purpose.
//
// When they agree, Remaining must be the reference's whole tokens (but within the same
// rounding of a whole number), and a denial's RetryAfter must be within retrySlack of the
// time the reference needs to gather the missing tokens.
//
// The input: a rate (1 to 10⁶ tokens over 10⁰ to 10⁶ seconds, or times 10 to 10⁴ per second,
// for the buckets faster than the Redis backend's maximum), a burst (1 to 1024), then
// per request three bytes: two for the gap since the last one (0 to 4 intervals, but at least
// 4 µs, or, with the top bit set, Burst times that) and one for the cost.
func FuzzTokenBucketMatchesXRate(f *testing.F) {
	// The seed timeline: Rate 1/s, Burst 2; steps of 0.1 s land on whole tokens.
	f.Add(uint32(1), uint8(0), uint16(1), []byte{
		0x33, 0x03, 0, 0, 0, 0, 0, 0, 0, 0x66, 0x2c, 0, 0, 0, 0, 0x00, 0x20, 0, 0x00, 0x20, 0,
	})
	// Binary fractions of a second (2, 4, 8 per second): every boundary is exact.
	f.Add(uint32(8), uint8(0), uint16(7), []byte{
		0, 0, 3, 0, 0, 3, 0, 0x08, 0, 0, 0x10, 1, 0, 0x04, 0, 0, 0x04, 0, 0, 0x04, 0, 0xff, 0xff, 7,
	})
	// Thirds of a second: intervals of 333,333.3 µs, never whole.
	f.Add(uint32(3), uint8(0), uint16(2), []byte{
		0, 0, 0, 0, 0, 2, 0, 0x20, 0, 0x55, 0x15, 1, 0, 0x08, 0, 0x01, 0x80, 1, 0xaa, 0xaa, 0,
	})
	// A million a second (the Redis backend's maximum), bursts of 100.
	f.Add(uint32(1_000_000), uint8(0), uint16(99), []byte{
		0, 0, 50, 0, 0, 49, 0, 0x20, 0, 0x10, 0x00, 99, 0xff, 0x7f, 0, 0x01, 0x00, 0, 7, 0, 3,
	})
	// 100 a minute, and one a day.
	f.Add(uint32(100), uint8(2), uint16(99), []byte{0, 0, 99, 0, 0, 0, 0, 0x10, 0, 0x80, 0x40, 9, 0x00, 0x01, 0})
	f.Add(uint32(1), uint8(5), uint16(3), []byte{0, 0, 0, 0, 0, 2, 0, 0x20, 0, 0xff, 0xff, 1, 0, 0x20, 0})
	// Faster than the Redis backend goes: whole tokens (2·10⁶ and 10⁹ a second), and beyond.
	f.Add(uint32(199_999), uint8(7), uint16(99), []byte{0, 0, 50, 0, 0, 49, 0, 0x40, 9, 0x10, 0x00, 99, 0, 0, 3})
	f.Add(uint32(999_999), uint8(9), uint16(999), []byte{0, 0, 250, 0, 0, 250, 0xff, 0x7f, 0, 0x01, 0x80, 9, 0, 0, 7})
	f.Add(uint32(499_999), uint8(10), uint16(999), []byte{0, 0, 250, 0, 0, 250, 0xff, 0x7f, 0, 0x01, 0x80, 9, 0, 0, 7})
	// A rate with no short decimal form: 7/9 per second.
	f.Add(uint32(700_000), uint8(6), uint16(5), []byte{0x10, 0, 1, 0x20, 0, 2, 0x30, 0, 3, 0x40, 0, 4, 0, 0x08, 5})
	f.Fuzz(func(t *testing.T, tokens uint32, per uint8, burst uint16, data []byte) {
		limit := ratelimit.Limit{Rate: float64(1 + tokens%1_000_000), Burst: 1 + int(burst%1024)}
		if p := int(per % 11); p < 7 {
			limit.Rate /= math.Pow10(p)
		} else {
			limit.Rate *= math.Pow10(p - 6)
		}
		// At least a microsecond's tokens, the least burst the limiter accepts at that rate.
		limit.Burst = max(limit.Burst, int(math.Ceil(limit.Rate/1e6)))
		playAgainstXRate(t, limit, data)
	})
}

// retrySlack is how far a RetryAfter may be from the exact time the missing tokens take. The
// bucket answers the first whole microsecond at which its own arithmetic admits the request:
// up to a microsecond after the exact time, and one more when the exact time falls within a
// rounding of a whole microsecond, which on a clock of 2⁴⁸ µs since 2020 is 0.04 µs.
const retrySlack = 1100 * time.Nanosecond

// playAgainstXRate plays the requests decoded from data (see FuzzTokenBucketMatchesXRate) on
// both limiters, and returns how many both allowed and both denied.
func playAgainstXRate(t *testing.T, limit ratelimit.Limit, data []byte) (allowed, denied int) {
	clock := ratelimittest.NewClock()
	l := New(WithClock(clock.Now), WithCleanupInterval(-1))
	defer l.Close()
	ref := rate.NewLimiter(rate.Limit(limit.Rate), limit.Burst)
	interval := 1e6 / limit.Rate // µs
	ctx := context.Background()
	// rounding is how far from a boundary a request may be and still be tipped by rounding:
	// a microsecond's worth of tokens, and a little float slack.
	rounding := limit.Rate/1e6 + 1e-9*float64(limit.Burst)
	key, tipped := "k", 0
	// The clock moves at most 2⁵⁰ µs (35 years) in all, within the years the bucket's
	// arithmetic is exact for.
	budget := int64(1) << 50
	for i := 0; len(data) >= 3 && i < 1000; i, data = i+1, data[3:] {
		gap := binary.LittleEndian.Uint16(data)
		span := max(4*interval, 4) // µs: at high rates, arrivals a few microseconds apart
		if gap&0x8000 != 0 {
			span *= float64(limit.Burst)
		}
		us := min(int64(float64(gap&0x7fff)/0x7fff*span), budget)
		budget -= us
		clock.Advance(time.Duration(us) * time.Microsecond)
		n := 1 + int(data[2])%limit.Burst
		now := clock.Now()

		held := ref.TokensAt(now)
		got, err := l.AllowN(ctx, key, limit, n)
		require.NoError(t, err)
		want := ref.AllowN(now, n)
		if got.Allowed != want {
			require.InDelta(t, float64(n), held, rounding,
				"request %d (n=%d at %v): allowed %v, x/time/rate %v with %v tokens", i, n, now, got.Allowed, want, held)
			// A boundary tipped both ways: from here on the buckets differ. Go on with a
			// fresh pair, both full.
			key = "k" + strconv.Itoa(i)
			ref = rate.NewLimiter(rate.Limit(limit.Rate), limit.Burst)
			tipped++
			continue
		}
		if want {
			allowed++
		} else {
			denied++
		}
		left := held
		if want {
			left -= float64(n)
		}
		if whole := math.Floor(left); left-whole > rounding && whole+1-left > rounding {
			require.Equal(t, int(whole), got.Remaining, "request %d: remaining of %v tokens", i, left)
		}
		if !want {
			need := time.Duration((float64(n) - held) / limit.Rate * 1e9)
			slack := retrySlack
			if limit.Rate > scriptMaxRate {
				slack += time.Microsecond // the whole-token clock may lag by a token, < 1 µs
			}
			require.InDelta(t, need, got.RetryAfter, float64(slack)+1e-12*float64(need),
				"request %d (n=%d, %v tokens held): retry after", i, n, held)
		}
	}
	if tipped > 0 {
		t.Logf("%d boundaries tipped both ways", tipped)
	}
	return allowed, denied
}

// TestTokenBucketMatchesXRate plays long random timelines, from fixed seeds, on limits from
// one a day to a million a second, against golang.org/x/time/rate.
func TestTokenBucketMatchesXRate(t *testing.T) {
	limits := []ratelimit.Limit{
		{Rate: 1, Burst: 2},
		{Rate: 10, Burst: 1},
		{Rate: 3, Burst: 7},
		ratelimit.PerMinute(100),
		ratelimit.PerHour(5),
		{Rate: 1.0 / 86400, Burst: 3},
		{Rate: 123_456.789, Burst: 20},
		{Rate: 1e6, Burst: 64},
		{Rate: 2e6, Burst: 100},    // whole tokens
		{Rate: 7.77e7, Burst: 250}, // whole tokens, not whole per microsecond
		// (tokens, last) under a mutex. Burst ≥ Rate·1 µs, the least the limiter accepts,
		// refills between any two readings of the clock: nothing is denied.
		{Rate: 5e9, Burst: 5000},
	}
	for i, limit := range limits {
		t.Run(limit.String(), func(t *testing.T) {
			data := make([]byte, 3*1000)
			state := uint64(i + 1)
			for j := range data {
				state ^= state << 13
				state ^= state >> 7
				state ^= state << 17
				data[j] = byte(state)
			}
			allowed, denied := playAgainstXRate(t, limit, data)
			t.Logf("%d allowed, %d denied", allowed, denied)
			require.Greater(t, allowed, 50)
			if limit.Rate < 1e9 {
				require.Greater(t, denied, 50)
			}
		})
	}
}
