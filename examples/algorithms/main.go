// Command algorithms plays one traffic trace through every rate-limiting algorithm of the
// local backend, on a simulated clock, prints what each made of it, and draws it: one PNG per
// algorithm and one comparing them all, into docs/img. The trace is a client sending a little
// over the rate of PerSecond(10) for four seconds, then a burst of twice the Burst straddling
// a window boundary, then the steady load again (see trace.go). It then plays a cold start
// through a token bucket with a warm-up and one without (warmup.go), and draws that too.
//
//	cd examples/algorithms && go run .             # writes ../../docs/img/*.png
//	go run . -out /tmp/plots                       # somewhere else
//	go run . -out ''                               # the figures only, no images
//
// An algorithm the local backend does not implement yet (it answers ErrNotSupported) is
// reported and left out of the images. It is a module of its own so that its plotting
// library never becomes a dependency of ratelimit.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/sluice-go/ratelimit"
)

// algorithms are the algorithms the program plays, in the order of ratelimit.Algorithm.
var algorithms = []ratelimit.Algorithm{
	ratelimit.TokenBucket,
	ratelimit.FixedWindow,
	ratelimit.SlidingWindowLog,
	ratelimit.SlidingWindowCounter,
	ratelimit.LeakyBucket,
}

func main() {
	out := flag.String("out", filepath.Join("..", "..", "docs", "img"),
		"directory for the PNGs, which must exist or have a parent that does (empty: no images)")
	flag.Parse()
	if err := generate(os.Stdout, *out); err != nil {
		fmt.Fprintln(os.Stderr, "algorithms:", err)
		os.Exit(1)
	}
}

// generate plays the trace through every algorithm, prints the summary to w and, unless dir
// is empty, writes the images into dir.
func generate(w io.Writer, dir string) error {
	at := arrivals()
	var outcomes []outcome
	var skipped []string
	for _, alg := range algorithms {
		ds, err := play(alg, at)
		if errors.Is(err, ratelimit.ErrNotSupported) {
			skipped = append(skipped, fmt.Sprintf("%v: not implemented by the local backend yet (it answers ErrNotSupported); no plot", alg))
			continue
		}
		if err != nil {
			return err
		}
		outcomes = append(outcomes, outcome{alg: alg, decisions: ds})
	}

	win := window(traceLimit)
	fmt.Fprintf(w, "%d requests under %v (W = %s): %d steady at 14.1/s, %d in a burst across %s, %d steady again\n\n",
		len(at), traceLimit, seconds(win), phases[0].count, phases[1].count, seconds(burstAt), phases[2].count)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "algorithm\tadmitted\tdenied\tmax in any %s\tmax in an aligned %s\tmax delay\tmin gap between departures\t\n",
		seconds(win), seconds(win))
	for _, o := range outcomes {
		s := summarize(o.decisions, win)
		fmt.Fprintf(tw, "%v\t%d\t%d\t%d\t%d\t%v\t%v\t\n",
			o.alg, s.admitted, s.denied, s.maxSliding, s.maxAligned, s.maxDelay, s.minGap)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range skipped {
		fmt.Fprintln(w, "skipped", s)
	}
	cs, err := playColdStart()
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	printColdStart(w, cs)
	ov, err := playOverload()
	if err != nil {
		return err
	}
	fmt.Fprintln(w)
	printOverload(w, ov)
	if dir == "" || len(outcomes) == 0 {
		return nil
	}

	fmt.Fprintln(w)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w (run from examples/algorithms, or pass -out)", err)
	}
	for _, o := range outcomes {
		name := filepath.Join(dir, strings.ToLower(o.alg.String())+".png")
		if err := writeFile(w, name, func(f io.Writer) error { return writeFigure(f, o) }); err != nil {
			return err
		}
	}
	if err := writeFile(w, filepath.Join(dir, "warmup.png"),
		func(f io.Writer) error { return writeColdStart(f, cs) }); err != nil {
		return err
	}
	if err := writeFile(w, filepath.Join(dir, "overload.png"),
		func(f io.Writer) error { return writeOverload(f, ov) }); err != nil {
		return err
	}
	return writeFile(w, filepath.Join(dir, "algorithms.png"),
		func(f io.Writer) error { return writeComparison(f, outcomes) })
}

// writeFile creates name, fills it with fill and reports its size on w.
func writeFile(w io.Writer, name string, fill func(io.Writer) error) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	info, err := os.Stat(name)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s (%.1f KB)\n", name, float64(info.Size())/1000)
	return nil
}
