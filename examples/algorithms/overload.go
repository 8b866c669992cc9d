package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/priority"
)

// The mixed-priority overload: one token bucket, the default reserves, and three clients at
// once. A sheddable one floods it at ten times its rate (a request every millisecond); a
// normal one asks 25 times a second and a critical one 20 times, together half the rate.
// Within a millisecond the flood asks first, the critical client last: the worst order for
// the important requests.
var (
	// overloadLimit is 100 a second, a burst of 50: the defaults keep 5 tokens back from
	// normal requests and 25 from sheddable ones.
	overloadLimit = ratelimit.Limit{Rate: 100, Burst: 50}
	// overloadSpan is how long the clients ask; each client's period between requests.
	overloadSpan = 3 * time.Second
	overloadBy   = []struct {
		p      priority.Level
		period time.Duration
	}{
		{priority.Sheddable, time.Millisecond},
		{priority.Normal, 40 * time.Millisecond},
		{priority.Critical, 50 * time.Millisecond},
	}
)

// overload is what the bucket made of the overload: per priority, the times of the
// requests it admitted and how many it denied, and the whole tokens it held after each
// millisecond.
type overload struct {
	admitted [3][]time.Duration
	denied   [3]int
	level    plotter.XYs
}

// playOverload asks the bucket as overloadBy says, every millisecond of overloadSpan, on a
// simulated clock.
func playOverload() (overload, error) {
	now := traceStart
	limiter := local.New(local.WithClock(func() time.Time { return now }), local.WithCleanupInterval(-1))
	defer limiter.Close()
	var o overload
	for at := time.Duration(0); at < overloadSpan; at += time.Millisecond {
		now = traceStart.Add(at)
		for _, c := range overloadBy {
			if at%c.period != 0 {
				continue
			}
			res, err := limiter.Allow(priority.With(context.Background(), c.p), "api", overloadLimit)
			if err != nil {
				return overload{}, fmt.Errorf("%v at %v: %w", c.p, at, err)
			}
			if res.Allowed {
				o.admitted[c.p] = append(o.admitted[c.p], at)
			} else {
				o.denied[c.p]++
			}
		}
		res, err := limiter.Peek(context.Background(), "api", overloadLimit, 1)
		if err != nil {
			return overload{}, err
		}
		held := res.Remaining // whole tokens left after one more: one fewer than held
		if res.Allowed {
			held++
		}
		o.level = append(o.level, plotter.XY{X: at.Seconds(), Y: float64(held)})
	}
	return o, nil
}

// overloadBin is what the counts of the overload are per.
const overloadBin = 100 * time.Millisecond

// printOverload writes what each priority asked and got.
func printOverload(w io.Writer, o overload) {
	fmt.Fprintf(w, "overload for %s under %v, default reserves (normal %d, sheddable %d tokens):\n",
		seconds(overloadSpan), overloadLimit,
		priority.Reserves{}.Tokens(priority.Normal, overloadLimit.Burst),
		priority.Reserves{}.Tokens(priority.Sheddable, overloadLimit.Burst))
	for _, c := range overloadBy {
		fmt.Fprintf(w, "  %-9v every %-5v admitted %4d, denied %4d\n", c.p, c.period, len(o.admitted[c.p]), o.denied[c.p])
	}
}

// writeOverload renders the overload as a PNG: on the left what each priority got per
// overloadBin, on the right the tokens the bucket held against the reserves.
func writeOverload(w io.Writer, o overload) error {
	per := newPlot(0, overloadSpan, 500*time.Millisecond)
	per.Title.Text = fmt.Sprintf("%v: sheddable flood at 10× beside normal and critical requests", overloadLimit)
	per.Y.Label.Text = fmt.Sprintf("admitted per %v", overloadBin)
	per.Y.Tick.Marker = plot.ConstantTicks(ticks(0, 30, 5, "%g"))
	lines := []*plotter.Line{
		stepLine(overloadSteps(o.admitted[priority.Sheddable]), red, 1.5),
		stepLine(overloadSteps(o.admitted[priority.Normal]), blue, 2),
		stepLine(overloadSteps(o.admitted[priority.Critical]), green, 2),
	}
	for _, l := range lines {
		per.Add(l)
	}
	per.Y.Min, per.Y.Max = 0, 32 // after Add: clip the first burst

	lvl := newPlot(0, overloadSpan, 500*time.Millisecond)
	lvl.Title.Text = "tokens in the bucket"
	lvl.Y.Tick.Marker = plot.ConstantTicks(ticks(0, 50, 5, "%g"))
	level := line(o.level, grey, 1)
	lvl.Add(level)
	for _, p := range []priority.Level{priority.Sheddable, priority.Normal} {
		r := flat(float64(priority.Reserves{}.Tokens(p, overloadLimit.Burst)), black)
		r.Dashes = dashes
		lvl.Add(r)
	}
	lvl.Y.Min, lvl.Y.Max = 0, 52

	reserve := flat(0, black)
	reserve.Dashes = dashes
	legend := []entry{
		{"critical", line(nil, green, 2)},
		{"normal", line(nil, blue, 2)},
		{"sheddable", line(nil, red, 1.5)},
		{"right: the reserves kept from sheddable (25) and normal (5)", reserve},
	}
	return writePNG(w, []row{{per, lvl}}, legend, panelHeight)
}

// overloadSteps returns the counts of ts per overloadBin over overloadSpan, as the corners
// of a post-step line.
func overloadSteps(ts []time.Duration) plotter.XYs {
	counts := make([]int, overloadSpan/overloadBin)
	for _, t := range ts {
		counts[t/overloadBin]++
	}
	var pts plotter.XYs
	for i, c := range counts {
		pts = append(pts, plotter.XY{X: (time.Duration(i) * overloadBin).Seconds(), Y: float64(c)})
	}
	return append(pts, plotter.XY{X: overloadSpan.Seconds(), Y: float64(counts[len(counts)-1])})
}
