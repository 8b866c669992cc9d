package main

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
)

// The trace every algorithm is played: one client under PerSecond(10) (Rate 10/s, Burst 10,
// so T = 1/Rate = 100 ms and W = Burst/Rate = 1 s), in three phases:
//
//	steady  0 – 3.976 s    one request every 71 ms (14.1/s, 41 % over the rate): 57 requests
//	burst   4.950 – 5.045 s  20 requests 5 ms apart: 10 before the window boundary at 5 s,
//	                       10 after it
//	steady  5.5 – 7.985 s  one request every 71 ms again: 36 requests
//
// The quiet second before the burst lets every algorithm recover, so the burst meets each one
// fresh. The spacings are chosen so that no two requests are exactly W apart and no token
// count lands exactly on a whole number (71 ms is 0.71 of a token), so the figures do not
// hang on how an algorithm breaks a tie.
var (
	// traceLimit is the limit of every decision in the trace.
	traceLimit = ratelimit.PerSecond(10)
	// traceStart is the trace's zero: a whole second (2026-01-01T00:00:00Z, Unix 1767225600),
	// so the fixed windows, aligned to the Unix epoch, start at 0 s, 1 s, 2 s … of the trace.
	traceStart = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)
	// traceEnd is where the plots' time axis ends: after the last request (7.985 s) and its
	// departure from a leaky bucket, at most (Burst-1)·T = 0.9 s later.
	traceEnd = 9 * time.Second
	// burstAt is the window boundary the burst straddles.
	burstAt = 5 * time.Second
)

// phase is a run of evenly spaced requests.
type phase struct {
	from, step time.Duration
	count      int
}

// phases are the trace's three phases, in order.
var phases = []phase{
	{from: 0, step: 71 * time.Millisecond, count: 57},
	{from: burstAt - 50*time.Millisecond, step: 5 * time.Millisecond, count: 20},
	{from: 5500 * time.Millisecond, step: 71 * time.Millisecond, count: 36},
}

// arrivals returns the offsets from traceStart at which requests arrive, in order.
func arrivals() []time.Duration {
	var at []time.Duration
	for _, p := range phases {
		for i := range p.count {
			at = append(at, p.from+time.Duration(i)*p.step)
		}
	}
	return at
}

// decision is what the limiter said about one request.
type decision struct {
	at      time.Duration // arrival, from traceStart
	allowed bool
	delay   time.Duration // Result.Delay: how long a shaper holds the request
}

// departs is when the request proceeds: its arrival plus the delay a shaper imposes.
func (d decision) departs() time.Duration { return d.at + d.delay }

// play sends every request of the trace, in order, to a fresh local limiter running alg on a
// simulated clock, and returns its decisions. An algorithm the local backend does not
// implement yet returns an error wrapping ratelimit.ErrNotSupported.
func play(alg ratelimit.Algorithm, at []time.Duration) ([]decision, error) {
	now := traceStart
	limiter := local.New(local.WithClock(func() time.Time { return now }),
		local.WithAlgorithm(alg), local.WithCleanupInterval(-1))
	defer limiter.Close()

	out := make([]decision, 0, len(at))
	for _, a := range at {
		now = traceStart.Add(a)
		res, err := limiter.Allow(context.Background(), "client-1", traceLimit)
		if err != nil {
			return nil, fmt.Errorf("%v at %v: %w", alg, a, err)
		}
		out = append(out, decision{at: a, allowed: res.Allowed, delay: res.Delay})
	}
	return out, nil
}

// window is W = Burst/Rate, the interval a limit is stated over.
func window(limit ratelimit.Limit) time.Duration {
	return time.Duration(float64(limit.Burst)/limit.Rate*1e6+0.5) * time.Microsecond
}

// summary is what one algorithm made of the trace.
type summary struct {
	admitted, denied int
	// maxSliding is the most requests admitted in any interval of length W; maxAligned, in
	// any window of length W aligned to the Unix epoch (a fixed window's own).
	maxSliding, maxAligned int
	// maxDelay is the longest Result.Delay; minGap, the shortest time between two
	// consecutive departures (for a policing algorithm, two admitted arrivals).
	maxDelay, minGap time.Duration
}

// summarize measures decisions against a window of w.
func summarize(ds []decision, w time.Duration) summary {
	var s summary
	var admitted, departures []time.Duration
	perWindow := map[int64]int{}
	for _, d := range ds {
		if !d.allowed {
			s.denied++
			continue
		}
		s.admitted++
		admitted = append(admitted, d.at)
		departures = append(departures, d.departs())
		s.maxDelay = max(s.maxDelay, d.delay)
		perWindow[traceStart.Add(d.at).UnixMicro()/w.Microseconds()]++
	}
	for i := range admitted {
		s.maxSliding = max(s.maxSliding, inLast(admitted[:i+1], admitted[i], w))
	}
	for _, n := range perWindow {
		s.maxAligned = max(s.maxAligned, n)
	}
	for i := 1; i < len(departures); i++ {
		gap := departures[i] - departures[i-1]
		if i == 1 || gap < s.minGap {
			s.minGap = gap
		}
	}
	return s
}

// inLast counts the times in sorted ts that fall in (t-w, t].
func inLast(ts []time.Duration, t, w time.Duration) int {
	n := 0
	for _, x := range ts {
		if x > t-w && x <= t {
			n++
		}
	}
	return n
}
