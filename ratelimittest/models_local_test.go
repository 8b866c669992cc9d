package ratelimittest

// The reference models of the sliding log, the leaky bucket and the windows, checked against
// the local backend on fixed timelines and under the fuzzer: where the two disagree, one of
// them is wrong.

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
)

// localHarness returns a fresh local limiter of algorithm a on a Clock.
func localHarness(t *testing.T, a ratelimit.Algorithm) harness {
	clock := NewClock()
	l := local.New(local.WithClock(clock.Now), local.WithAlgorithm(a), local.WithCleanupInterval(-1))
	t.Cleanup(func() { l.Close() })
	return harness{Limiter: l, Advance: clock.Advance, CanWait: true, Algorithm: a}
}

// TestSlidingLogModel plays random timelines, from fixed seeds, against the reference model
// of checkSlidingLog, on limits from a single token to a thousand.
func TestSlidingLogModel(t *testing.T) {
	cases := []struct {
		limit      ratelimit.Limit
		maxAdvance time.Duration
		maxN       int
	}{
		{ratelimit.Limit{Rate: 1, Burst: 1}, 1500 * time.Millisecond, 1},
		{ratelimit.Limit{Rate: 3, Burst: 2}, 400 * time.Millisecond, 2},  // W = 666,667 µs
		{ratelimit.Limit{Rate: 100, Burst: 7}, 30 * time.Millisecond, 7}, // W = 70 ms
		{ratelimit.Limit{Rate: 1e6, Burst: 3}, 2 * time.Microsecond, 2},  // W = 3 µs
		{ratelimit.PerMinute(1000), 200 * time.Millisecond, 20},          // W = 60 s
		{ratelimit.Limit{Rate: 0.5, Burst: 40}, 3 * time.Second, 5},      // W = 80 s
	}
	for i, c := range cases {
		t.Run(c.limit.String(), func(t *testing.T) {
			ops := randomOps(uint64(100+i), 2000, c.maxAdvance, c.maxN)
			checkSlidingLog(t, localHarness(t, ratelimit.SlidingWindowLog), c.limit, ops)
		})
	}
}

// FuzzSlidingLog checks the sliding log against its reference model on timelines decoded
// from the input: a burst (1 to 32), a window (1 µs to 65 ms), then 3 bytes per request,
// two for the clock's advance (up to twice the window) and one for the cost.
func FuzzSlidingLog(f *testing.F) {
	f.Add(uint8(3), uint16(1000), []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 0})
	f.Add(uint8(1), uint16(1), []byte{1, 0, 0, 2, 0, 0, 0, 0, 0})
	f.Add(uint8(32), uint16(65535), []byte{9, 200, 31, 0, 0, 4, 128, 0, 7, 255, 255, 1})
	f.Fuzz(func(t *testing.T, burst uint8, window uint16, data []byte) {
		b := 1 + int(burst)%32
		w := 1 + int64(window)
		limit := ratelimit.Limit{Rate: float64(b) * 1e6 / float64(w), Burst: b}
		var ops []tick
		for ; len(data) >= 3 && len(ops) < 500; data = data[3:] {
			advance := int64(binary.LittleEndian.Uint16(data)) * 2 * w / 65535
			ops = append(ops, tick{Advance: time.Duration(advance) * time.Microsecond, N: 1 + int(data[2])%b})
		}
		checkSlidingLog(t, localHarness(t, ratelimit.SlidingWindowLog), limit, ops)
	})
}

// TestLeakyBucketModel plays random timelines, from fixed seeds, against the reference
// shaper of checkLeakyBucket, from one request a day to a million a second.
func TestLeakyBucketModel(t *testing.T) {
	day := 24 * time.Hour
	cases := []struct {
		limit      ratelimit.Limit
		maxAdvance time.Duration
		maxN       int
	}{
		{ratelimit.Limit{Rate: 1e6 / 1024, Burst: 1}, 2 * time.Millisecond, 1}, // T = 1024 µs
		{ratelimit.Limit{Rate: 1e6 / 1024, Burst: 9}, 3 * time.Millisecond, 4},
		{ratelimit.Limit{Rate: 3, Burst: 5}, 500 * time.Millisecond, 3},      // T = 333,333.3 µs
		{ratelimit.Limit{Rate: 7.5, Burst: 20}, 300 * time.Millisecond, 6},   // T = 133,333.3 µs
		{ratelimit.Limit{Rate: 300000, Burst: 50}, 20 * time.Microsecond, 5}, // T = 3.3 µs
		{ratelimit.Limit{Rate: 1e6, Burst: 10}, 3 * time.Microsecond, 4},     // T = 1 µs
		{ratelimit.Limit{Rate: 1.0 / 86400, Burst: 3}, 2 * day, 2},           // T = 1 day
	}
	for i, c := range cases {
		t.Run(c.limit.String(), func(t *testing.T) {
			ops := randomOps(uint64(200+i), 2000, c.maxAdvance, c.maxN)
			checkLeakyBucket(t, localHarness(t, ratelimit.LeakyBucket), c.limit, ops)
		})
	}
}

// leakyRates are the rates FuzzLeakyBucket picks from: binary and fractional intervals.
var leakyRates = []float64{1e6 / 1024, 3, 7.5, 10, 300000, 1e6, 1.0 / 3600, 1e6 / 3}

// FuzzLeakyBucket checks the shaper against its reference model on timelines decoded from
// the input: a rate (from leakyRates) and a burst (1 to 16), then 3 bytes per request, two
// for the clock's advance (up to four intervals) and one for the cost.
func FuzzLeakyBucket(f *testing.F) {
	f.Add(uint8(0), uint8(4), []byte{0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 255, 255, 2})
	f.Add(uint8(1), uint8(0), []byte{1, 0, 0, 255, 63, 0, 0, 0, 0})
	f.Add(uint8(4), uint8(15), []byte{9, 200, 3, 0, 0, 4, 128, 0, 7, 255, 255, 1})
	f.Add(uint8(7), uint8(2), []byte{0, 64, 0, 0, 0, 1, 0, 128, 2, 3, 0, 0})
	f.Fuzz(func(t *testing.T, rate, burst uint8, data []byte) {
		limit := ratelimit.Limit{Rate: leakyRates[int(rate)%len(leakyRates)], Burst: 1 + int(burst)%16}
		period := 1e6 / limit.Rate // µs
		var ops []tick
		for ; len(data) >= 3 && len(ops) < 500; data = data[3:] {
			advance := float64(binary.LittleEndian.Uint16(data)) * 4 * period / 65535
			ops = append(ops, tick{
				Advance: time.Duration(advance) * time.Microsecond,
				N:       1 + int(data[2])%limit.Burst,
			})
		}
		checkLeakyBucket(t, localHarness(t, ratelimit.LeakyBucket), limit, ops)
	})
}

// FuzzFixedWindow checks random timelines against the reference model of
// this package (see checkWindowModel).
func FuzzFixedWindow(f *testing.F) { fuzzWindows(f, ratelimit.FixedWindow) }

// FuzzSlidingWindowCounter checks random timelines against the reference model of
// this package (see checkWindowModel).
func FuzzSlidingWindowCounter(f *testing.F) { fuzzWindows(f, ratelimit.SlidingWindowCounter) }

// fuzzWindows reads a limit and a timeline from the fuzzer's bytes: a burst of 1 to 16, a
// window of 1 µs to 16.7 s, then per request three bytes, two for the gap (0 to 4 windows)
// and one for the cost, up to 500 requests.
func fuzzWindows(f *testing.F, alg ratelimit.Algorithm) {
	f.Add(uint8(9), uint32(10_000_000), []byte("\x00\x00\x07\x00\x10\x00\x00\x40\x03\xff\xff\x00\x01\x02\x03"))
	f.Add(uint8(0), uint32(333_333), []byte("\x00\x00\x00\x00\x00\x00\x00\x40\x00\x00\x40\x00"))
	f.Add(uint8(15), uint32(7), []byte("\x00\x00\x0f\x01\x00\x01\x02\x00\x05\x00\x00\x0f"))
	f.Add(uint8(3), uint32(59_999_999), []byte("\xf0\x3f\x02\x20\x00\x01\x00\x00\x03\x10\x40\x01"))
	f.Fuzz(func(t *testing.T, burst uint8, window uint32, data []byte) {
		b := 1 + int(burst%16)
		w := 1 + int64(window%(1<<24))
		limit := ratelimit.Limit{Rate: float64(b) * 1e6 / float64(w), Burst: b}
		data = data[:min(len(data), 3*500)] // the model's checks grow with the square of this
		arrivals := make([]windowArrival, 0, len(data)/3)
		for i := 0; i+2 < len(data); i += 3 {
			gap := (int64(data[i]) | int64(data[i+1])<<8) * w / (1 << 14)
			arrivals = append(arrivals, windowArrival{
				Advance: time.Duration(gap) * time.Microsecond,
				N:       1 + int(data[i+2])%b,
			})
		}
		clock := NewClock()
		l := local.New(local.WithClock(clock.Now), local.WithAlgorithm(alg), local.WithCleanupInterval(-1))
		defer l.Close()
		h := harness{Limiter: l, Advance: clock.Advance, CanWait: true, Algorithm: alg}
		checkWindowModel(t, h, clock.Now(), "fuzz", limit, arrivals)
	})
}
