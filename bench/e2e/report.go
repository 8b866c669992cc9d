package e2e

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Report writes the samples as one Markdown table per backend: a row per cell and
// limiter, with the medians over the rounds of the requests per second, the server's CPU
// time per request and the p50 and p99 latencies; each peer's CPU and p99 over ours in
// the same cell (medians of the ratios of each round), and in how many rounds ours cost
// less CPU per request.
func Report(w io.Writer, samples []Sample) {
	byVariant := map[Variant][]Sample{}
	var order []Variant
	for _, s := range samples {
		if _, ok := byVariant[s.Variant]; !ok {
			order = append(order, s.Variant)
		}
		byVariant[s.Variant] = append(byVariant[s.Variant], s)
	}
	slices.SortStableFunc(order, func(a, b Variant) int {
		if a.Backend != b.Backend { // local first
			return strings.Compare(a.Backend, b.Backend)
		}
		return indexOf(a) - indexOf(b)
	})
	backend := ""
	for _, v := range order {
		if v.Backend != backend {
			backend = v.Backend
			fmt.Fprintf(w, "\n%s backend:\n\n", backend)
			fmt.Fprintln(w, "| framework / key / traffic | limiter | req/s | server CPU µs/req | p50 µs | p99 µs | CPU ÷ ours | p99 ÷ ours | rounds ours cheaper |")
			fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|")
		}
		ss := byVariant[v]
		ours := byVariant[Variant{v.Framework, v.Backend, v.Key, v.Traffic, "ours"}]
		cpuRatio, p99Ratio, cheaper := "", "", ""
		if v.Limiter != "ours" && v.Limiter != "none" && len(ours) > 0 {
			var cr, pr []float64
			wins, paired := 0, 0
			for _, s := range ss {
				for _, o := range ours {
					if o.Round != s.Round || o.CPUPerRequest() == 0 {
						continue
					}
					cr = append(cr, float64(s.CPUPerRequest())/float64(o.CPUPerRequest()))
					pr = append(pr, float64(s.Quantile(0.99))/float64(o.Quantile(0.99)))
					paired++
					if o.CPUPerRequest() < s.CPUPerRequest() {
						wins++
					}
				}
			}
			if paired > 0 {
				cpuRatio, p99Ratio = fmt.Sprintf("%.2f", median(cr)), fmt.Sprintf("%.2f", median(pr))
				cheaper = fmt.Sprintf("%d of %d", wins, paired)
			}
		}
		fmt.Fprintf(w, "| %s / %s / %s | %s | %.0f | %.1f | %.0f | %.0f | %s | %s | %s |\n",
			v.Framework, v.Key, v.Traffic, v.Limiter,
			median(each(ss, func(s Sample) float64 { return s.PerSecond() })),
			median(each(ss, func(s Sample) float64 { return micros(s.CPUPerRequest()) })),
			median(each(ss, func(s Sample) float64 { return micros(s.Quantile(0.5)) })),
			median(each(ss, func(s Sample) float64 { return micros(s.Quantile(0.99)) })),
			cpuRatio, p99Ratio, cheaper)
	}
}

// indexOf is v's place in the order of Variants.
func indexOf(v Variant) int {
	return slices.Index(Variants(Variant{}), v)
}

func each(ss []Sample, f func(Sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = f(s)
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}
