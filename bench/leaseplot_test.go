package bench

import (
	"context"
	"flag"
	"fmt"
	"image/color"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/lease"
)

var leasePlot = flag.String("leaseplot", "", "write TestLeasePlot's figure to this PNG file")

// The scenario of the figure: 8 instances share 2,000/s with a burst of 200, asked 8,000
// times a second (4× the rate) for 2 s in steps of 1 ms, counted per 100 ms.
const (
	plotK      = 8
	plotDemand = 8 // per 1 ms step, spread over the instances in turn
	plotSteps  = 2000
	plotWindow = 100 // steps
)

var plotLimit = ratelimit.Limit{Rate: 2000, Burst: 200}

// TestLeasePlot plays the scenario three ways: leases, a plain Redis decision each, and a
// copy of the bucket in each instance synced every 100 ms (gubernator's GLOBAL behaviour,
// simulated). Per 100 ms, leases keep Burst + Rate·0.1 s + k·c, plain Redis Burst +
// Rate·0.1 s, and the stale copies go past both. With -leaseplot it draws the three.
func TestLeasePlot(t *testing.T) {
	server := redistest.NewServer(t)
	c := plotLimit.Burst / (lease.CapShare * plotK)
	leaseBound := plotLimit.Burst + int(plotLimit.Rate)/10 + plotK*c
	var leased, plain []int
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(time.Until(time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC))) // past 2020
		var ls, ps []ratelimit.Limiter
		for range plotK {
			b := plotBackend(t, server, "plot:lease:")
			l := lease.New(b, lease.WithInstances(plotK), lease.WithHot(func(string, ratelimit.Limit) bool { return true }))
			t.Cleanup(func() { l.Close() })
			ls = append(ls, l)
			ps = append(ps, plotBackend(t, server, "plot:plain:"))
		}
		leased, plain = playPlot(t, ls), playPlot(t, ps)
	})
	stale := playStale()
	for i := range leased {
		if leased[i] > leaseBound || plain[i] > plotLimit.Burst+int(plotLimit.Rate)/10 {
			t.Fatalf("window %d: leases %d (bound %d), plain %d", i, leased[i], leaseBound, plain[i])
		}
	}
	if maxOf(stale) <= leaseBound {
		t.Fatalf("the stale copies admit at most %d per window, within the leases' bound %d", maxOf(stale), leaseBound)
	}
	if *leasePlot != "" {
		if err := drawLeasePlot(*leasePlot, leased, plain, stale, leaseBound); err != nil {
			t.Fatal(err)
		}
	}
}

// plotBackend returns a Redis limiter of its own client, on the bubble's clock.
func plotBackend(t *testing.T, server *redistest.Server, prefix string) *distributed.Limiter {
	client := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { client.Close() })
	b, err := distributed.New(client, distributed.WithPrefix(prefix), distributed.WithClientClock(time.Hour),
		distributed.WithTimeout(-1))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// playPlot runs the scenario on the instances and returns the admissions per window.
func playPlot(t *testing.T, instances []ratelimit.Limiter) []int {
	windows := make([]int, plotSteps/plotWindow)
	next := 0
	for step := range plotSteps {
		for range plotDemand {
			res, err := instances[next%len(instances)].Allow(context.Background(), "global", plotLimit)
			next++
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed {
				windows[step/plotWindow]++
			}
		}
		time.Sleep(time.Millisecond)
	}
	return windows
}

// playStale simulates gubernator's GLOBAL behaviour: each instance decides from its copy of
// the bucket's remaining tokens, and every 100 ms the owner takes the hits of all, refills,
// and sends the result to every copy.
func playStale() []int {
	windows := make([]int, plotSteps/plotWindow)
	owner := float64(plotLimit.Burst)
	copies, hits := make([]float64, plotK), 0
	for i := range copies {
		copies[i] = owner
	}
	next := 0
	for step := range plotSteps {
		if step > 0 && step%plotWindow == 0 {
			owner = max(min(owner+plotLimit.Rate/10, float64(plotLimit.Burst))-float64(hits), 0)
			hits = 0
			for i := range copies {
				copies[i] = owner
			}
		}
		for range plotDemand {
			i := next % plotK
			next++
			if copies[i] >= 1 {
				copies[i]--
				hits++
				windows[step/plotWindow]++
			}
		}
	}
	return windows
}

func maxOf(v []int) int {
	m := 0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// drawLeasePlot draws the admissions per window of the three, the limit's rate and the
// leases' bound, to a PNG file.
func drawLeasePlot(path string, leased, plain, stale []int, bound int) error {
	p := plot.New()
	p.Title.Text = "8 instances, 2,000/s, burst 200, asked 4× the rate: admitted per 100 ms"
	p.X.Label.Text = "time (s)"
	p.Y.Label.Text = "admitted"
	p.Y.Min, p.Y.Max = 0, 1150 // room for the legend above the lines
	series := func(v []int) plotter.XYs {
		xy := make(plotter.XYs, 0, 2*len(v))
		for i, n := range v {
			x := float64(i) / 10
			xy = append(xy, plotter.XY{X: x, Y: float64(n)}, plotter.XY{X: x + 0.1, Y: float64(n)})
		}
		return xy
	}
	flat := func(y float64) plotter.XYs { return plotter.XYs{{X: 0, Y: y}, {X: float64(len(leased)) / 10, Y: y}} }
	for _, s := range []struct {
		name   string
		xy     plotter.XYs
		colour color.Color
		dashed bool
	}{
		{"gubernator-style stale copies (simulated)", series(stale), color.RGBA{R: 213, G: 94, A: 255}, false},
		{"plain Redis", series(plain), color.RGBA{G: 114, B: 178, A: 255}, false},
		{"leases", series(leased), color.RGBA{G: 158, B: 115, A: 255}, false},
		{"Rate × 100 ms", flat(plotLimit.Rate / 10), color.Gray{Y: 90}, true},
		{fmt.Sprintf("leases' bound, Burst + Rate·W + k·c (%d)", bound), flat(float64(bound)), color.Gray{Y: 150}, true},
	} {
		l, err := plotter.NewLine(s.xy)
		if err != nil {
			return err
		}
		l.Color, l.Width = s.colour, vg.Points(1.5)
		if s.dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	p.Legend.Top = true
	return p.Save(8*vg.Inch, 3.5*vg.Inch, path)
}
