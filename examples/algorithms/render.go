package main

import (
	"fmt"
	"image"
	"image/color"
	stddraw "image/draw"
	"image/png"
	"io"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/sluice-go/ratelimit"
)

// outcome is one algorithm's decisions on the trace.
type outcome struct {
	alg       ratelimit.Algorithm
	decisions []decision
}

// Colours, chosen to stay apart for the colour-blind (Okabe–Ito), and greys.
var (
	green = color.RGBA{R: 0, G: 158, B: 115, A: 255}
	red   = color.RGBA{R: 213, G: 94, B: 0, A: 255}
	blue  = color.RGBA{R: 0, G: 114, B: 178, A: 255}
	black = color.RGBA{A: 255}
	grey  = color.RGBA{R: 150, G: 150, B: 150, A: 255}
	light = color.RGBA{R: 225, G: 225, B: 225, A: 255}
)

// Sizes of the images (96 dots per inch).
const (
	figureWidth  = 8 * vg.Inch
	fullShare    = 0.72 // of the width, for the whole trace; the rest zooms in on the burst
	legendHeight = 0.35 * vg.Inch
	panelHeight  = 2.5 * vg.Inch // one algorithm's counts, and the legend
	laneHeight   = 1.4 * vg.Inch // a shaper's arrivals and departures
	rowHeight    = 1.5 * vg.Inch // one algorithm in the comparison
)

// sans is the typeface of every text; sizes are in points.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// row is one row of a figure: a plot of the whole trace and one zoomed in on the burst.
type row [2]*plot.Plot

// writeFigure renders one algorithm's figure as a PNG: its counts over time and, for a shaper,
// when each admitted request arrives and when it departs.
func writeFigure(w io.Writer, o outcome) error {
	rows := []row{{countsPlot(o, false), countsPlot(o, true)}}
	rows[0][0].Title.Text = fmt.Sprintf("%v — PerSecond(%d): Rate %g/s, Burst %d, W = %s",
		o.alg, traceLimit.Burst, traceLimit.Rate, traceLimit.Burst, seconds(window(traceLimit)))
	height := panelHeight
	shaper := o.alg == ratelimit.LeakyBucket
	if shaper {
		rows[0][0].X.Label.Text, rows[0][1].X.Label.Text = "", ""
		rows = append(rows, row{lanesPlot(o, false), lanesPlot(o, true)})
		height += laneHeight
	}
	return writePNG(w, rows, legendEntries(shaper), height)
}

// writeComparison renders the counts of every outcome, one row each, in one PNG.
func writeComparison(w io.Writer, outcomes []outcome) error {
	if len(outcomes) == 0 {
		return fmt.Errorf("no algorithm to compare")
	}
	rows := make([]row, len(outcomes))
	for i, o := range outcomes {
		rows[i] = row{countsPlot(o, false), countsPlot(o, true)}
		rows[i][0].Title.Text = o.alg.String()
		rows[i][0].Y.Label.Text = "admitted in W"
		if i < len(outcomes)-1 {
			rows[i][0].X.Label.Text, rows[i][1].X.Label.Text = "", ""
		}
	}
	return writePNG(w, rows, legendEntries(false), vg.Length(len(rows))*rowHeight+legendHeight)
}

// writePNG lays the rows out, the whole trace on the left and the zooms on the right, with
// the legend below, and encodes the image as a PNG.
func writePNG(w io.Writer, rows []row, legend []entry, height vg.Length) error {
	img := vgimg.New(figureWidth, height)
	dc := draw.New(img)
	body := draw.Crop(dc, 0, 0, legendHeight, 0)
	split := body.Min.X + fullShare*(body.Max.X-body.Min.X)
	columns := [2]draw.Canvas{draw.Crop(body, 0, split-body.Max.X, 0, 0), draw.Crop(body, split-body.Min.X, 0, 0, 0)}
	for col, c := range columns {
		plots := make([][]*plot.Plot, len(rows))
		for i, r := range rows {
			plots[i] = []*plot.Plot{r[col]}
		}
		tiles := draw.Tiles{Rows: len(rows), Cols: 1, PadY: 3 * vg.Millimeter,
			PadTop: 2 * vg.Millimeter, PadLeft: vg.Millimeter, PadRight: 2 * vg.Millimeter}
		canvases := plot.Align(plots, tiles, c)
		for i := range plots {
			plots[i][0].Draw(canvases[i][0])
		}
	}
	drawLegend(draw.Crop(dc, 2*vg.Millimeter, 0, 0, legendHeight-height), legend)
	return encode(w, img.Image())
}

// encode writes img as a PNG of a small palette: the colours of the marks, each blended
// towards white, and greys. Anti-aliased edges take the nearest of them, which keeps the
// files at a fraction of their full-colour size without a visible difference.
func encode(w io.Writer, img image.Image) error {
	var pal color.Palette
	for i := range 32 {
		v := uint8(255 * i / 31)
		pal = append(pal, color.RGBA{R: v, G: v, B: v, A: 255})
	}
	for _, c := range []color.RGBA{green, red, blue} {
		for i := range 24 {
			mix := func(v uint8) uint8 { return uint8(int(v) + (255-int(v))*i/24) }
			pal = append(pal, color.RGBA{R: mix(c.R), G: mix(c.G), B: mix(c.B), A: 255})
		}
	}
	p := image.NewPaletted(img.Bounds(), pal)
	stddraw.Draw(p, p.Bounds(), img, img.Bounds().Min, stddraw.Src)
	enc := png.Encoder{CompressionLevel: png.BestCompression}
	return enc.Encode(w, p)
}

// entry is one item of a legend.
type entry struct {
	name  string
	thumb plot.Thumbnailer
}

// legendEntries explains the marks of countsPlot, and of lanesPlot for a shaper.
func legendEntries(shaper bool) []entry {
	burst := flat(0, black)
	burst.Dashes = dashes
	es := []entry{
		{"admitted", scatter(nil, draw.CircleGlyph{}, green)},
		{"denied", scatter(nil, draw.CrossGlyph{}, red)},
		{"admitted in the last W", flat(0, grey)},
		{"Burst", burst},
	}
	if shaper {
		es = append(es, entry{"departs (arrival + Result.Delay)", scatter(nil, draw.CircleGlyph{}, blue)})
	}
	return es
}

// drawLegend draws the entries side by side, from the left of c, centred vertically.
func drawLegend(c draw.Canvas, es []entry) {
	x := c.Min.X
	for _, e := range es {
		l := plot.NewLegend()
		l.TextStyle.Font = font.From(sans, 9)
		l.Top, l.Left = true, true
		l.Add(e.name, e.thumb)
		width := l.Rectangle(c).Size().X + 6*vg.Millimeter
		cell := c
		cell.Min.X, cell.Max.X = x, x+width
		cell.Max.Y -= (c.Size().Y - l.Rectangle(c).Size().Y) / 2
		l.Draw(cell)
		x += width
	}
}

// seconds formats d in seconds for people: "1 s", "0.5 s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%g s", d.Seconds())
}
