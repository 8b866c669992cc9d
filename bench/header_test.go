package bench

import (
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/go-chi/httprate"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/httpmw"
	"github.com/sluice-go/ratelimit/keyfuncs/httpkeys"
	"github.com/sluice-go/ratelimit/local"
)

// headerUsers is how many users the header-key benchmarks spread their requests over.
const headerUsers = 10_000

// headerMiddleware is one net/http rate-limit middleware keyed by the X-User header, built
// for allow traffic (a limit the run cannot exhaust) or deny traffic (one request per user
// per hour, each user's one request made before the timer).
type headerMiddleware struct {
	name string
	wrap func(b *testing.B, allow bool) func(http.Handler) http.Handler
}

func headerMiddlewares() []headerMiddleware {
	const (
		many = 1 << 30
		hour = time.Hour
	)
	byHeader := func(r *http.Request) (string, error) { return r.Header.Get("X-User"), nil }
	return []headerMiddleware{
		{"none", nil},
		{"ours", func(b *testing.B, allow bool) func(http.Handler) http.Handler {
			l := local.New()
			b.Cleanup(func() { _ = l.Close() })
			limit := ratelimit.Limit{Rate: 1.0 / 3600, Burst: 1}
			if allow {
				limit = ratelimit.Limit{Rate: many / 3600, Burst: many}
			}
			return httpmw.New(l, httpmw.WithLimit(limit), httpmw.WithKeyFunc(httpkeys.Header("X-User")))
		}},
		{"httprate", func(b *testing.B, allow bool) func(http.Handler) http.Handler {
			n := 1
			if allow {
				n = many
			}
			return httprate.Limit(n, hour, httprate.WithKeyFuncs(byHeader))
		}},
		{"sethvargo", func(b *testing.B, allow bool) func(http.Handler) http.Handler {
			tokens := uint64(1)
			if allow {
				tokens = many
			}
			store, err := memorystore.New(&memorystore.Config{Tokens: tokens, Interval: hour})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = store.Close(b.Context()) })
			m, err := httplimit.NewMiddleware(store, byHeader)
			if err != nil {
				b.Fatal(err)
			}
			return m.Handle
		}},
	}
}

// headerRequests returns one GET /items/1 per user, from one client address, each with its
// user's X-User header.
func headerRequests() []*http.Request {
	reqs := make([]*http.Request, headerUsers)
	for i := range reqs {
		r, _ := http.NewRequest(http.MethodGet, "http://bench/items/1", nil)
		r.RemoteAddr = remoteAddr
		r.Header.Set("X-User", "user-"+strconv.Itoa(i))
		reqs[i] = r
	}
	return reqs
}

// sink is the response writer of the header-key benchmarks: a fresh header map per request,
// as net/http gives each request, the status kept and the body dropped, so that the figures
// hold the middleware and the handler, not a recorder.
type sink struct {
	h    http.Header
	code int
}

func (s *sink) Header() http.Header { return s.h }
func (s *sink) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
}
func (s *sink) Write(p []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return len(p), nil
}

// openHeader returns a function that serves the i-th of reqs through m (the handler alone
// for "none") and returns the status, after making each user's first request when traffic
// is deny.
func openHeader(b *testing.B, m headerMiddleware, allow bool, reqs []*http.Request) func(i int) int {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	if m.wrap != nil {
		h = m.wrap(b, allow)(h)
	}
	serve := func(i int) int {
		w := &sink{h: make(http.Header)}
		h.ServeHTTP(w, reqs[i])
		return w.code
	}
	if !allow {
		for i := range reqs {
			if got := serve(i); got != http.StatusOK {
				b.Fatalf("%s: first request of user %d: status %d, want 200", m.name, i, got)
			}
		}
	}
	return serve
}

// BenchmarkHeaderKey/<middleware>/<allow|deny>: one request per op through a net/http
// rate-limit middleware keyed by the X-User header, walking 10,000 users whose buckets all
// exist before the timer: ours (httpmw with httpkeys.Header over the local backend) beside
// go-chi/httprate and sethvargo/go-limiter's httplimit, and the handler alone ("none").
// Every request must get 200 (allow) or 429 (deny).
func BenchmarkHeaderKey(b *testing.B) {
	reqs := headerRequests()
	for _, m := range headerMiddlewares() {
		for _, allow := range []bool{true, false} {
			b.Run(m.name+"/"+trafficName(allow), func(b *testing.B) {
				if m.wrap == nil && !allow {
					b.Skip("without middleware nothing is denied: see allow")
				}
				serve, want := openHeader(b, m, allow, reqs), wantStatus(allow)
				for i := range len(reqs) { // every bucket made, every code path warm
					serve(i)
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if got := serve(i); got != want {
						b.Fatalf("status %d, want %d", got, want)
					}
					if i++; i == len(reqs) {
						i = 0
					}
				}
			})
		}
	}
}

// BenchmarkHeaderKeyTurns/<allow|deny>: BenchmarkHeaderKey's middlewares in alternating,
// separately timed blocks of 1,000 requests, which a busy machine disturbs far less than
// separate runs; each op is one request through each. It reports each one's ns per request
// (<name>-ns/op), its allocations per request (<name>-allocs/op, counted after the timer),
// and ours over the best peer's ns (ours/best).
func BenchmarkHeaderKeyTurns(b *testing.B) {
	const block = 1000
	reqs := headerRequests()
	for _, allow := range []bool{true, false} {
		b.Run(trafficName(allow), func(b *testing.B) {
			ms := headerMiddlewares()
			if !allow {
				ms = ms[1:] // the handler alone denies nothing
			}
			serve := make([]func(int) int, len(ms))
			for c, m := range ms {
				serve[c] = openHeader(b, m, allow, reqs)
			}
			want := wantStatus(allow)
			spent, next := make([]time.Duration, len(ms)), make([]int, len(ms))
			b.ResetTimer()
			for done := 0; done < b.N; done += block {
				n := min(block, b.N-done)
				for c := range ms {
					i, start := next[c], time.Now()
					for range n {
						if got := serve[c](i); got != want {
							b.Fatalf("%s: status %d, want %d", ms[c].name, got, want)
						}
						if i++; i == len(reqs) {
							i = 0
						}
					}
					spent[c] += time.Since(start)
					next[c] = i
				}
			}
			b.StopTimer()
			best := time.Duration(0)
			for c, m := range ms {
				i := 0
				allocs := testing.AllocsPerRun(len(reqs), func() {
					serve[c](i)
					i = (i + 1) % len(reqs)
				})
				b.ReportMetric(float64(spent[c].Nanoseconds())/float64(b.N), m.name+"-ns/op")
				b.ReportMetric(allocs, m.name+"-allocs/op")
				if m.name != "none" && m.name != "ours" && (best == 0 || spent[c] < best) {
					best = spent[c]
				}
			}
			for c, m := range ms {
				if m.name == "ours" && best > 0 {
					b.ReportMetric(float64(spent[c])/float64(best), "ours/best")
				}
			}
		})
	}
}

func trafficName(allow bool) string {
	if allow {
		return "allow"
	}
	return "deny"
}

func wantStatus(allow bool) int {
	if allow {
		return http.StatusOK
	}
	return http.StatusTooManyRequests
}
