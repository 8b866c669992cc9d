// Command accuracy measures how far the sliding window counter (ratelimit.SlidingWindowCounter,
// run by the local backend) strays from the exact sliding window log it approximates, on a
// synthetic trace: many clients, each sending Poisson arrivals at its own mean rate, some of
// them in bursts. The counter and the log each decide every request and keep their own
// history of what they admitted, as two deployments would; the report counts the requests
// they decided differently, in each direction, by how fast the client sends, and the clients
// that only one of them ever limited.
//
//	cd bench && go run ./accuracy                  # 10⁷ requests per mix, under a minute
//	cd bench && go run ./accuracy -requests 1e6    # quicker
package main

import (
	"container/heap"
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
	"github.com/sluice-go/ratelimit/local"
)

func main() {
	requests := flag.Float64("requests", 1e7, "requests per mix")
	clients := flag.Int("clients", 2000, "clients (keys)")
	seed := flag.Uint64("seed", 1, "seed of the trace")
	flag.Parse()
	limit := ratelimit.PerMinute(60) // W = 60 s, Burst 60
	fmt.Printf("limit %v (W = 60 s); %d clients; seed %d\n\n", limit, *clients, *seed)
	for _, m := range mixes {
		r, err := simulate(config{limit: limit, mix: m, clients: *clients, requests: int(*requests), seed: *seed})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		r.print(os.Stdout)
	}
}

// mix is a population of clients: each client's mean rate, as a multiple of the limit's
// rate, is drawn log-uniformly from one of its bands, picked with the band's weight.
type mix struct {
	name  string
	bands []band
}

type band struct{ weight, lo, hi float64 }

var mixes = []mix{
	{"around the limit: every client at 0.5× to 2× the limit", []band{{1, 0.5, 2}}},
	{"mostly under: 90 % of clients at 0.02× to 0.5×, 10 % at 0.5× to 4×",
		[]band{{0.9, 0.02, 0.5}, {0.1, 0.5, 4}}},
	{"rarely near: 99 % of clients at 0.01× to 0.3×, 1 % at 0.5× to 2×",
		[]band{{0.99, 0.01, 0.3}, {0.01, 0.5, 2}}},
}

// burstChance is the chance that an arrival is a burst rather than one request; a burst is
// 2 to 30 requests, 1 ms apart.
const burstChance = 0.02

type config struct {
	limit    ratelimit.Limit
	mix      mix
	clients  int
	requests int
	seed     uint64
}

// tally counts decisions of the counter against the log's.
type tally struct{ agree, overAdmit, overDeny int }

func (t *tally) add(counter, exact bool) {
	switch {
	case counter == exact:
		t.agree++
	case counter:
		t.overAdmit++
	default:
		t.overDeny++
	}
}

func (t tally) total() int { return t.agree + t.overAdmit + t.overDeny }

// classes split clients by mean rate, as a multiple of the limit's: [0, 0.8), [0.8, 1.25),
// [1.25, ∞).
var classes = []struct {
	name  string
	below float64
}{{"under 0.8×", 0.8}, {"0.8× to 1.25×", 1.25}, {"over 1.25×", math.Inf(1)}}

func classOf(multiple float64) int {
	for i, c := range classes {
		if multiple < c.below {
			return i
		}
	}
	return len(classes) - 1
}

type report struct {
	cfg             config
	simulated       time.Duration
	byClass         []tally
	counterAdmitted int
	logAdmitted     int
	counterOnly     int // clients the counter denied at least once and the log never
	logOnly         int // clients the log denied at least once and the counter never
	busiest         int // the most requests the counter admitted to one client within W
}

func simulate(cfg config) (report, error) {
	w, err := args.Window(cfg.limit)
	if err != nil {
		return report{}, err
	}
	rng := rand.New(rand.NewPCG(cfg.seed, 0x5eed))
	// Start at a random point of a window, so the trace does not begin on a boundary.
	start := time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(w)) * time.Microsecond)
	now := start
	counter := local.New(local.WithAlgorithm(ratelimit.SlidingWindowCounter),
		local.WithClock(func() time.Time { return now }), local.WithCleanupInterval(-1))
	defer counter.Close()

	burst := cfg.limit.Burst
	type client struct {
		key           string
		rate          float64 // requests per µs
		class         int
		log           window
		seen          window // the counter's admissions, to find the busiest W
		counterDenied bool
		logDenied     bool
	}
	cs := make([]client, cfg.clients)
	q := make(arrivals, 0, cfg.clients)
	for i := range cs {
		multiple := drawRate(rng, cfg.mix)
		rate := cfg.limit.Rate * multiple / 1e6
		cs[i] = client{key: "client" + strconv.Itoa(i), rate: rate, class: classOf(multiple),
			log: newWindow(burst), seen: newWindow(2 * burst)}
		q = append(q, arrival{at: int64(rng.ExpFloat64() / rate), client: i})
	}
	heap.Init(&q)

	r := report{cfg: cfg, byClass: make([]tally, len(classes))}
	ctx := context.Background()
	for done := 0; done < cfg.requests; {
		a := q[0]
		c := &cs[a.client]
		n := 1
		if rng.Float64() < burstChance {
			n = 2 + rng.IntN(29)
		}
		for j := 0; j < n && done < cfg.requests; j++ {
			u := a.at + int64(j)*1000
			now = start.Add(time.Duration(u) * time.Microsecond)
			exact := c.log.admits(u, w)
			if exact {
				c.log.add(u)
				r.logAdmitted++
			}
			res, err := counter.Allow(ctx, c.key, cfg.limit)
			if err != nil {
				return r, err
			}
			if res.Allowed {
				r.counterAdmitted++
				r.busiest = max(r.busiest, c.seen.countAfter(u-w)+1)
				c.seen.add(u)
			}
			c.counterDenied = c.counterDenied || !res.Allowed
			c.logDenied = c.logDenied || !exact
			r.byClass[c.class].add(res.Allowed, exact)
			done++
			r.simulated = time.Duration(u) * time.Microsecond
		}
		q[0].at += int64(n-1)*1000 + int64(rng.ExpFloat64()/c.rate) + 1
		heap.Fix(&q, 0)
	}
	for _, c := range cs {
		switch {
		case c.counterDenied && !c.logDenied:
			r.counterOnly++
		case c.logDenied && !c.counterDenied:
			r.logOnly++
		}
	}
	return r, nil
}

// drawRate picks a band of m by weight, then a multiple of the limit's rate log-uniformly
// within it.
func drawRate(rng *rand.Rand, m mix) float64 {
	total := 0.0
	for _, b := range m.bands {
		total += b.weight
	}
	pick := rng.Float64() * total
	b := m.bands[len(m.bands)-1]
	for _, c := range m.bands {
		if pick < c.weight {
			b = c
			break
		}
		pick -= c.weight
	}
	return math.Exp(math.Log(b.lo) + rng.Float64()*(math.Log(b.hi)-math.Log(b.lo)))
}

// window is a ring of the last admission times of one client, at most its capacity: the
// exact sliding window log, when the capacity is Burst.
type window struct {
	times []int64
	next  int // where the next admission goes
	count int
}

func newWindow(capacity int) window { return window{times: make([]int64, capacity)} }

// admits reports whether one more request at u keeps the log within capacity over
// (u − w, u]: the oldest of the last capacity admissions must have left it.
func (lw *window) admits(u, w int64) bool {
	return lw.count < len(lw.times) || lw.times[lw.next] <= u-w
}

func (lw *window) add(u int64) {
	lw.times[lw.next] = u
	lw.next = (lw.next + 1) % len(lw.times)
	lw.count = min(lw.count+1, len(lw.times))
}

// countAfter counts the remembered admissions later than t.
func (lw *window) countAfter(t int64) int {
	n := 0
	for i := range lw.count {
		if lw.times[(lw.next-1-i+2*len(lw.times))%len(lw.times)] > t {
			n++
		} else {
			break
		}
	}
	return n
}

// arrival is a client's next arrival, at µs since the start.
type arrival struct {
	at     int64
	client int
}

// arrivals is a min-heap of arrivals by time.
type arrivals []arrival

func (q arrivals) Len() int           { return len(q) }
func (q arrivals) Less(i, j int) bool { return q[i].at < q[j].at }
func (q arrivals) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *arrivals) Push(x any)        { *q = append(*q, x.(arrival)) }
func (q *arrivals) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

func (r report) print(out *os.File) {
	var all tally
	for _, t := range r.byClass {
		all.agree += t.agree
		all.overAdmit += t.overAdmit
		all.overDeny += t.overDeny
	}
	total := all.total()
	pct := func(n, of int) string {
		return strconv.FormatFloat(100*float64(n)/float64(max(of, 1)), 'f', 3, 64) + " %"
	}
	fmt.Fprintf(out, "## %s\n\n", r.cfg.mix.name)
	fmt.Fprintf(out, "%d requests over %v of traffic; the log admitted %s of them, the counter %s.\n\n",
		total, r.simulated.Round(time.Second), pct(r.logAdmitted, total), pct(r.counterAdmitted, total))
	fmt.Fprintln(out, "| clients' rate | share of requests | decided differently | counter admitted, log denied | counter denied, log admitted |")
	fmt.Fprintln(out, "|---|---|---|---|---|")
	row := func(name string, t tally) {
		fmt.Fprintf(out, "| %s | %s | %s | %s | %s |\n", name, pct(t.total(), total),
			pct(t.overAdmit+t.overDeny, t.total()), pct(t.overAdmit, t.total()), pct(t.overDeny, t.total()))
	}
	for i, c := range classes {
		row(c.name, r.byClass[i])
	}
	row("all", all)
	fmt.Fprintf(out, "\nClients limited (denied at least once) by the counter only: %d; by the log only: %d, of %d.\n",
		r.counterOnly, r.logOnly, r.cfg.clients)
	fmt.Fprintf(out, "Most requests of one client the counter admitted within one window: %d (Burst %d).\n\n",
		r.busiest, r.cfg.limit.Burst)
}
