package bench

import (
	"context"
	"slices"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
)

// reserveRate paces BenchmarkReserveLateness: a slot every 2 ms (Burst 4, a ceiling of 8 ms
// ahead), so that a caller that goes at its slot books the next one about 2 ms ahead.
const reserveRate = 500

// BenchmarkReserveLateness times how late a paced caller goes after the slot it booked: one
// caller that reserves a token, sleeps the Delay it was given (as Wait does on Redis: one
// script, then a sleep), and goes, again and again. Lateness is the instant it goes less the
// slot's, the call's start plus the Delay: on Redis an upper bound, the round trip in it (the
// slot is on the Redis clock, some time after the call left). p50-late-µs and p99-late-µs over
// the run; beside it x/time/rate's Reserve in process, slept alike (the local backend books
// no slots).
func BenchmarkReserveLateness(b *testing.B) {
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: reserveRate, Burst: 4}
	ours := func(b *testing.B, l ratelimit.Limiter) {
		r, ok := ratelimit.As[ratelimit.Reserver](l)
		if !ok {
			b.Fatalf("%T books no slots", l)
		}
		late(b, func() (time.Duration, error) {
			res, err := r.Reserve(ctx, "paced", limit, 1, time.Second)
			if err == nil && !res.Allowed {
				b.Fatalf("no slot within a second: %+v", res)
			}
			return res.Delay, err
		})
	}
	b.Run("redis", func(b *testing.B) {
		srv := redistest.NewServer(b)
		pinRedis(b, srv)
		client := newRedisClient(srv.Addr())
		b.Cleanup(func() { client.Close() })
		// A second's timeout: a loaded VM stalls past the default 50 ms.
		l, err := distributed.New(client, distributed.WithTimeout(time.Second))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l.Close() })
		ours(b, l)
	})
	b.Run("x-time-rate", func(b *testing.B) {
		lim := rate.NewLimiter(reserveRate, 4)
		late(b, func() (time.Duration, error) {
			return lim.Reserve().Delay(), nil
		})
	})
}

// late runs book (a reservation, returning its Delay) then sleeps the Delay, b.N times, and
// reports the lateness after each slot: its p50 and p99 in µs.
func late(b *testing.B, book func() (time.Duration, error)) {
	lateness := make([]time.Duration, 0, 4096)
	for b.Loop() {
		start := time.Now()
		d, err := book()
		if err != nil {
			b.Fatal(err)
		}
		time.Sleep(d) // from the answer, as Wait sleeps
		lateness = append(lateness, time.Since(start.Add(d)))
	}
	if len(lateness) == 0 {
		return
	}
	slices.Sort(lateness)
	q := func(p float64) float64 {
		return float64(lateness[int(p*float64(len(lateness)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(q(0.50), "p50-late-µs")
	b.ReportMetric(q(0.99), "p99-late-µs")
	b.ReportMetric(0, "ns/op")
}
