package main

import (
	"fmt"
	"image/color"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The zooms: on the burst for the counts, on the burst and its departures for the lanes.
const (
	zoomFrom, zoomTo, zoomTick       = 4940 * time.Millisecond, 5060 * time.Millisecond, 50 * time.Millisecond
	departFrom, departTo, departTick = 4900 * time.Millisecond, 6000 * time.Millisecond, 500 * time.Millisecond
)

// dashes draws the Burst line.
var dashes = []vg.Length{vg.Points(4), vg.Points(3)}

// countsPlot shows how many requests the algorithm admitted in the last W (a step line) and
// every arrival on it: admitted ones where the line steps up, denied ones at the height that
// turned them away. zoom restricts it to the burst.
func countsPlot(o outcome, zoom bool) *plot.Plot {
	limit, win := traceLimit, window(traceLimit)
	p := newPlot(0, traceEnd, time.Second)
	if zoom {
		p = newPlot(zoomFrom, zoomTo, zoomTick)
		p.Title.Text = fmt.Sprintf("zoom: the burst across %s", seconds(burstAt))
	} else {
		p.Y.Label.Text = fmt.Sprintf("admitted in the last %s", seconds(win))
	}
	p.Y.Min, p.Y.Max = 0, 2*float64(limit.Burst)+1
	p.Y.Tick.Marker = plot.ConstantTicks(ticks(0, 2*float64(limit.Burst), 5, "%g"))

	burst := flat(float64(limit.Burst), black)
	burst.Dashes = dashes
	p.Add(burst)

	var admitted []time.Duration
	var ok, denied plotter.XYs
	for _, d := range o.decisions {
		if zoom && (d.at < zoomFrom || d.at > zoomTo) {
			if d.allowed {
				admitted = append(admitted, d.at)
			}
			continue
		}
		if d.allowed {
			admitted = append(admitted, d.at)
			ok = append(ok, plotter.XY{X: d.at.Seconds(), Y: float64(inLast(admitted, d.at, win))})
		} else {
			denied = append(denied, plotter.XY{X: d.at.Seconds(), Y: float64(inLast(admitted, d.at, win))})
		}
	}
	steps := line(stepsOf(admitted, win, p.X.Min, p.X.Max), grey, 1)
	steps.StepStyle = plotter.PostStep
	p.Add(steps, scatter(ok, draw.CircleGlyph{}, green), scatter(denied, draw.CrossGlyph{}, red))
	return p
}

// lanesPlot shows, for a shaper, each admitted request's arrival and departure (arrival plus
// Result.Delay), joined by a line, and the denied arrivals. zoom restricts it to the burst
// and its departures.
func lanesPlot(o outcome, zoom bool) *plot.Plot {
	p := newPlot(0, traceEnd, time.Second)
	p.Title.Text = "when each admitted request leaves"
	if zoom {
		p = newPlot(departFrom, departTo, departTick)
		p.Title.Text = fmt.Sprintf("the burst leaves T = %s apart", seconds(time.Duration(float64(time.Second)/traceLimit.Rate)))
	}
	var arrive, leave, denied plotter.XYs
	for _, d := range o.decisions {
		if zoom && (d.at < departFrom || d.departs() > departTo) {
			continue
		}
		if !d.allowed {
			denied = append(denied, plotter.XY{X: d.at.Seconds(), Y: 1})
			continue
		}
		a, l := plotter.XY{X: d.at.Seconds(), Y: 1}, plotter.XY{X: d.departs().Seconds(), Y: 0}
		arrive, leave = append(arrive, a), append(leave, l)
		p.Add(line(plotter.XYs{a, l}, grey, 0.5))
	}
	p.Add(scatter(arrive, draw.CircleGlyph{}, green), scatter(denied, draw.CrossGlyph{}, red),
		scatter(leave, draw.CircleGlyph{}, blue))
	p.NominalY("departs", "arrives")
	p.Y.Min, p.Y.Max = -0.5, 1.5
	return p
}

// newPlot returns a plot of the time from from to to, in seconds, with a tick every step, a
// light grid and sans-serif text.
func newPlot(from, to, step time.Duration) *plot.Plot {
	p := plot.New()
	p.Title.TextStyle.Font = font.From(sans, 10)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font = font.From(sans, 9)
		a.Tick.Label.Font = font.From(sans, 8)
	}
	p.X.Label.Text = "time (s)"
	p.X.Min, p.X.Max = from.Seconds(), to.Seconds()
	format := "%g"
	if step%time.Second != 0 {
		format = "%.2f"
	}
	first := (from + step - 1) / step * step
	p.X.Tick.Marker = plot.ConstantTicks(ticks(first.Seconds(), to.Seconds(), step.Seconds(), format))
	grid := plotter.NewGrid()
	grid.Horizontal.Color, grid.Vertical.Color = light, light
	p.Add(grid)
	return p
}

// ticks returns ticks labelled with format from lo to hi, every step.
func ticks(lo, hi, step float64, format string) []plot.Tick {
	var ts []plot.Tick
	for i := 0; lo+float64(i)*step <= hi+step/1e6; i++ {
		v := lo + float64(i)*step
		ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprintf(format, v)})
	}
	return ts
}

// stepsOf returns, as a post-step line from x0 to x1 seconds, how many of the sorted times ts
// fall in (t-w, t]: up by one at each time, down by one w later.
func stepsOf(ts []time.Duration, w time.Duration, x0, x1 float64) plotter.XYs {
	at := func(c time.Duration) float64 {
		n := 0
		for _, t := range ts {
			if t <= c && c < t+w {
				n++
			}
		}
		return float64(n)
	}
	from, to := time.Duration(x0*1e9), time.Duration(x1*1e9)
	pts := plotter.XYs{{X: x0, Y: at(from)}}
	var changes []time.Duration
	for _, t := range ts {
		changes = append(changes, t, t+w)
	}
	for _, c := range sortedUnique(changes) {
		if c > from && c <= to {
			pts = append(pts, plotter.XY{X: c.Seconds(), Y: at(c)})
		}
	}
	return append(pts, plotter.XY{X: x1, Y: pts[len(pts)-1].Y})
}

// sortedUnique sorts ds in place (insertion sort: they come nearly sorted) and drops repeats.
func sortedUnique(ds []time.Duration) []time.Duration {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j] < ds[j-1]; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
	out := ds[:0]
	for i, d := range ds {
		if i == 0 || d != ds[i-1] {
			out = append(out, d)
		}
	}
	return out
}

// scatter draws pts with glyph in c; no points make a legend thumbnail.
func scatter(pts plotter.XYs, glyph draw.GlyphDrawer, c color.Color) *plotter.Scatter {
	// NewScatter refuses only NaN and infinite coordinates, which times never are.
	s, err := plotter.NewScatter(pts)
	if err != nil {
		s = &plotter.Scatter{}
	}
	s.GlyphStyle = draw.GlyphStyle{Color: c, Radius: vg.Points(2), Shape: glyph}
	return s
}

// line joins pts with a line width points wide.
func line(pts plotter.XYs, c color.Color, width float64) *plotter.Line {
	// NewLine refuses only NaN and infinite coordinates, which times never are.
	l, err := plotter.NewLine(pts)
	if err != nil {
		l = &plotter.Line{}
	}
	l.LineStyle = draw.LineStyle{Color: c, Width: vg.Points(width)}
	return l
}

// flat is a horizontal line at y.
func flat(y float64, c color.Color) *plotter.Function {
	f := plotter.NewFunction(func(float64) float64 { return y })
	f.Color, f.Width = c, vg.Points(1)
	return f
}
