package bench

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// ratioPeers are the contenders BenchmarkAllowRatio sets against ours.
func ratioPeers() []contender {
	return []contender{
		{"sethvargo", openSethvargo},
		{"seed", openSeed},
		{"floor", openFloor},
	}
}

// BenchmarkAllowRatio runs BenchmarkAllow's scenarios for ours and one peer at a time, in a
// way that a busy machine disturbs far less than separate benchmarks: the two take turns in
// blocks (serial: 4,000 decisions by one goroutine; parallel: 4,000 decisions by each of
// GOMAXPROCS goroutines, started together, the block timed from the start to the last one's
// end), so that both meet the same load within a millisecond. Each op is one decision by
// each contender. It reports ours-ns/op and peer-ns/op (the sums of their blocks' times over
// b.N; for parallel blocks, wall time over decisions, as b.RunParallel reports), and
// ours/peer, the median of the per-turn ratios.
func BenchmarkAllowRatio(b *testing.B) {
	sets := keySets()
	for _, peer := range ratioPeers() {
		for _, set := range sets {
			for _, tr := range traffics() {
				for _, mode := range []string{"serial", "parallel"} {
					b.Run(peer.name+"/"+set.name+"/"+tr.name+"/"+mode, func(b *testing.B) {
						decide := [2]take{
							prepare(b, contender{"ours", openOurs}, tr, set.keys),
							prepare(b, peer, tr, set.keys),
						}
						r := runTurns(b, decide, set.keys, mode == "parallel")
						for c := range decide {
							checkPath(b, tr, r.calls[c], r.allowed[c], r.failed[c])
						}
						b.ReportMetric(float64(r.spent[0].Nanoseconds())/float64(r.calls[0]), "ours-ns/op")
						b.ReportMetric(float64(r.spent[1].Nanoseconds())/float64(r.calls[1]), "peer-ns/op")
						b.ReportMetric(r.median(), "ours/peer")
					})
				}
			}
		}
	}
}

// turns is what runTurns measured for the two contenders.
type turns struct {
	spent                  [2]time.Duration
	calls, allowed, failed [2]int64
	ratios                 []float64 // per turn, ours ÷ peer
}

func (r *turns) median() float64 {
	if len(r.ratios) == 0 {
		return 0
	}
	slices.Sort(r.ratios)
	return r.ratios[len(r.ratios)/2]
}

// turnBlock is how many decisions each goroutine makes in one contender's turn: enough that
// starting the goroutines of a parallel turn (about a microsecond) weighs little.
const turnBlock = 4000

// runTurns makes about b.N decisions with each of decide[0] and decide[1], in alternating
// turns, on one goroutine or, if parallel, on GOMAXPROCS goroutines, each walking keys from
// its own starting point.
func runTurns(b *testing.B, decide [2]take, keys []string, parallel bool) *turns {
	r := &turns{}
	workers := 1
	if parallel {
		workers = runtime.GOMAXPROCS(0)
	}
	next := make([][2]int, workers) // each worker's place in keys, per contender
	for w := range next {
		at := startAt(uint64(w+1), len(keys))
		next[w] = [2]int{at, at}
	}
	var counts [2][]int64 // per contender: allowed, failed of each worker
	for c := range counts {
		counts[c] = make([]int64, 2*workers)
	}
	run := func(c, w, n int) {
		k := next[w][c]
		var a, f int64
		for range n {
			ok, err := decide[c](keys[k])
			switch {
			case err != nil:
				f++
			case ok:
				a++
			}
			if k++; k == len(keys) {
				k = 0
			}
		}
		next[w][c] = k
		counts[c][2*w] += a
		counts[c][2*w+1] += f
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += turnBlock * workers {
		n := min(turnBlock, (b.N-done+workers-1)/workers)
		var took [2]time.Duration
		for c := range decide {
			start := time.Now()
			if workers == 1 {
				run(c, 0, n)
			} else {
				var wg sync.WaitGroup
				for w := range workers {
					wg.Go(func() { run(c, w, n) })
				}
				wg.Wait()
			}
			took[c] = time.Since(start)
			r.spent[c] += took[c]
			r.calls[c] += int64(n * workers)
		}
		r.ratios = append(r.ratios, float64(took[0])/float64(took[1]))
	}
	b.StopTimer()
	for c := range counts {
		for w := range workers {
			r.allowed[c] += counts[c][2*w]
			r.failed[c] += counts[c][2*w+1]
		}
	}
	return r
}
