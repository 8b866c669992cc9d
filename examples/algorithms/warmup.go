package main

import (
	"context"
	"fmt"
	"image/color"
	"io"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
)

// The cold start: a client asks for a token every millisecond, ten times the rate, from the
// moment a bucket with a warm-up is new, under the conformance suite's warm-up limit, and the
// same client under the same limit without a warm-up beside it.
var (
	// warmLimit is 100 a second, a burst of 50, warm after 1 s.
	warmLimit = ratelimit.Limit{Rate: 100, Burst: 50, Warmup: time.Second}
	// coldSpan is how long the client asks; coldBin, what the counts are per.
	coldSpan, coldBin = 2 * time.Second, 100 * time.Millisecond
)

// coldStart is what the two buckets made of the cold start: the times each admitted a
// request, from the first request.
type coldStart struct {
	warm, plain []time.Duration
}

// playColdStart asks both buckets once every millisecond over coldSpan, on a simulated
// clock.
func playColdStart() (coldStart, error) {
	now := traceStart
	limiter := local.New(local.WithClock(func() time.Time { return now }), local.WithCleanupInterval(-1))
	defer limiter.Close()
	plain := ratelimit.Limit{Rate: warmLimit.Rate, Burst: warmLimit.Burst}
	var cs coldStart
	for at := time.Duration(0); at < coldSpan; at += time.Millisecond {
		now = traceStart.Add(at)
		for _, c := range []struct {
			limit ratelimit.Limit
			times *[]time.Duration
		}{{warmLimit, &cs.warm}, {plain, &cs.plain}} {
			res, err := limiter.Allow(context.Background(), "client-1", c.limit)
			if err != nil {
				return coldStart{}, fmt.Errorf("%v at %v: %w", c.limit, at, err)
			}
			if res.Allowed {
				*c.times = append(*c.times, at)
			}
		}
	}
	return cs, nil
}

// perBin counts the times in each coldBin of coldSpan.
func perBin(ts []time.Duration) []int {
	counts := make([]int, coldSpan/coldBin)
	for _, t := range ts {
		counts[t/coldBin]++
	}
	return counts
}

// ramp is the rate the warm clock runs at, d into the warm-up, in tokens per coldBin:
// Rate·f(d), f going from 1/3 to 1 over the warm-up.
func ramp(d time.Duration) float64 {
	f := 1.0/3 + 2.0/3*min(d.Seconds()/warmLimit.Warmup.Seconds(), 1)
	return warmLimit.Rate * f * coldBin.Seconds()
}

// printColdStart writes the counts per coldBin of both buckets.
func printColdStart(w io.Writer, cs coldStart) {
	fmt.Fprintf(w, "cold start, a request every ms for %s under %v, admitted per %v:\n", seconds(coldSpan), warmLimit, coldBin)
	fmt.Fprintf(w, "  warm-up  %v, %d in all\n", perBin(cs.warm), len(cs.warm))
	fmt.Fprintf(w, "  plain    %v, %d in all\n", perBin(cs.plain), len(cs.plain))
}

// writeColdStart renders the cold start as a PNG: on the left the counts per coldBin of both
// buckets against the ramp, on the right what each has admitted so far against the token
// bucket's bound, Burst + Rate·t.
func writeColdStart(w io.Writer, cs coldStart) error {
	warmSteps, plainSteps := binSteps(perBin(cs.warm)), binSteps(perBin(cs.plain))
	per := newPlot(0, coldSpan, 250*time.Millisecond)
	plainFirst := perBin(cs.plain)[0]
	per.Title.Text = fmt.Sprintf("cold start: %v, a request every ms (without: %d in the first %v)",
		warmLimit, plainFirst, coldBin)
	per.Y.Label.Text = fmt.Sprintf("admitted per %v", coldBin)
	per.Y.Tick.Marker = plot.ConstantTicks(ticks(0, 20, 5, "%g"))
	rampLine := plotter.NewFunction(func(x float64) float64 { return ramp(time.Duration(x * 1e9)) })
	rampLine.Color, rampLine.Width, rampLine.Dashes = black, vg.Points(1), dashes
	per.Add(stepLine(plainSteps, grey, 1.5), stepLine(warmSteps, green, 2), rampLine)
	// after Add, which widens the axes to the data: clip the plain burst
	per.Y.Min, per.Y.Max = 0, 22

	sum := newPlot(0, coldSpan, 500*time.Millisecond)
	sum.Title.Text = "admitted so far"
	sum.Y.Tick.Marker = plot.ConstantTicks(ticks(0, 250, 50, "%g"))
	bound := plotter.NewFunction(func(x float64) float64 { return float64(warmLimit.Burst) + warmLimit.Rate*x })
	bound.Color, bound.Width, bound.Dashes = black, vg.Points(1), dashes
	sum.Add(bound, stepLine(cumulative(cs.plain), grey, 1.5), stepLine(cumulative(cs.warm), green, 2))
	sum.Y.Min, sum.Y.Max = 0, 260

	legend := []entry{
		{"with the warm-up", line(nil, green, 2)},
		{"without", line(nil, grey, 1.5)},
		{"left: the ramp, Rate·f(t); right: Burst + Rate·t", bound},
	}
	return writePNG(w, []row{{per, sum}}, legend, panelHeight)
}

// stepLine is line drawn as post-steps.
func stepLine(pts plotter.XYs, c color.Color, width float64) *plotter.Line {
	l := line(pts, c, width)
	l.StepStyle = plotter.PostStep
	return l
}

// binSteps returns counts per coldBin as the corners of a post-step line over coldSpan.
func binSteps(counts []int) plotter.XYs {
	var pts plotter.XYs
	for i, c := range counts {
		pts = append(pts, plotter.XY{X: (time.Duration(i) * coldBin).Seconds(), Y: float64(c)})
	}
	return append(pts, plotter.XY{X: coldSpan.Seconds(), Y: float64(counts[len(counts)-1])})
}

// cumulative returns the count of ts so far, as a post-step line over coldSpan.
func cumulative(ts []time.Duration) plotter.XYs {
	pts := plotter.XYs{{X: 0, Y: 0}}
	for i, t := range ts {
		pts = append(pts, plotter.XY{X: t.Seconds(), Y: float64(i + 1)})
	}
	return append(pts, plotter.XY{X: coldSpan.Seconds(), Y: float64(len(ts))})
}
