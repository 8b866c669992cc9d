package faults

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
)

func TestMain(m *testing.M) {
	gin.SetMode(gin.TestMode)
	redistest.Main(m)
}

// noLeaks fails t if goroutines started during the test outlive its cleanups. It waits up
// to 3 s for them to end: a go-redis pool that lost Redis re-dials once a second in a
// goroutine of its own, which ends within that second of the client's Close. One goroutine
// of the test proxy's own is not counted: toxiproxy v2.5.0 leaves a link's pipe blocked on
// a send when the proxy stops while data is in flight (seen on a loaded machine).
func noLeaks(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	proxy := goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe")
	// A deadline tick's fired timer only closes a channel (see distributed's noLeaks).
	tick := goleak.IgnoreTopFunction("github.com/sluice-go/ratelimit/distributed.(*tick).close-fm")
	t.Cleanup(func() { // runs after the later cleanups
		deadline := time.Now().Add(3 * time.Second)
		for {
			err := goleak.Find(ignore, proxy, tick)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Error(err)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	})
}

// newClient returns a go-redis client of addr built as
// https://github.com/sluice-go/ratelimit/blob/main/docs/redis.md recommends:
// ContextTimeoutEnabled, and everything else left at go-redis's defaults.
func newClient(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// stack is a fallback Limiter on a Redis primary, with or without a local secondary, and
// the same Limiter timed: hand the middleware timed, to learn what each decision cost.
type stack struct {
	limiter *fallback.Limiter
	events  *events
	timed   *timed
	primary *counted
}

// counted is a Limiter that counts the calls to AllowN of the Limiter it wraps, in all and
// per key (see tally).
type counted struct {
	ratelimit.Limiter
	calls, failures atomic.Int64

	mu   sync.Mutex
	keys map[string]*tally
}

// tally is what the primary answered for one key: how many calls it admitted, denied and
// failed, and when it last admitted and denied one.
type tally struct {
	allowed, denied, failed int
	lastOK, lastDenied      time.Time
	lastDecided             time.Time // the later of lastOK and lastDenied
	// answering is when the primary first decided the key after it last failed on it
	// (zero while it has not since).
	answering time.Time
}

func (c *counted) Allow(ctx context.Context, key string, limit ratelimit.Limit) (ratelimit.Result, error) {
	return c.AllowN(ctx, key, limit, 1)
}

func (c *counted) AllowN(ctx context.Context, key string, limit ratelimit.Limit, n int) (ratelimit.Result, error) {
	c.calls.Add(1)
	res, err := c.Limiter.AllowN(ctx, key, limit, n)
	if err != nil {
		c.failures.Add(1)
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		c.keys = make(map[string]*tally)
	}
	k := c.keys[key]
	if k == nil {
		k = &tally{}
		c.keys[key] = k
	}
	switch {
	case err != nil:
		k.failed++
		k.answering = time.Time{}
		return res, err
	case res.Allowed:
		k.allowed++
		k.lastOK = now
	default:
		k.denied++
		k.lastDenied = now
	}
	k.lastDecided = now
	if k.answering.IsZero() {
		k.answering = now
	}
	return res, err
}

// forgetAnswering marks every key as not known to be answered by the primary, as at the
// start of a fault: from then on, tally.answering is when the primary first decided the key
// after the last of that mark and its failures.
func (c *counted) forgetAnswering() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.keys {
		k.answering = time.Time{}
	}
}

// tally returns a copy of what the primary answered for key.
func (c *counted) tally(key string) tally {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k := c.keys[key]; k != nil {
		return *k
	}
	return tally{}
}

// tallies returns the tallies of the limiter keys of names, by name.
func (c *counted) tallies(names []string) map[string]tally {
	m := make(map[string]tally, len(names))
	for _, name := range names {
		m[name] = c.tally(limiterKey(name))
	}
	return m
}

// newStack builds the stack the tests run: distributed.New(client) with its defaults (50 ms
// deadline), a local secondary if degrade is set, and the fallback Limiter's defaults but
// for opts. client is any go-redis client: a single node's, a Cluster's, a failover one.
func newStack(t *testing.T, client redis.Scripter, degrade bool, opts ...fallback.Option) *stack {
	t.Helper()
	primary, err := distributed.New(client)
	require.NoError(t, err)
	var secondary ratelimit.Limiter
	if degrade {
		sec := local.New()
		t.Cleanup(func() { _ = sec.Close() })
		secondary = sec
	}
	s := &stack{events: &events{}, primary: &counted{Limiter: primary}}
	s.limiter = fallback.New(s.primary, secondary, append([]fallback.Option{
		fallback.WithStateHook(s.events.hook), fallback.WithErrorHandler(s.events.fail),
	}, opts...)...)
	t.Cleanup(func() { _ = s.limiter.Close() })
	s.timed = &timed{Limiter: s.limiter}
	return s
}

// sample is one request of a load test: when it started, how long it took, and how it
// ended (an HTTP status, or a gRPC code mapped to one; 0 for a transport error); and, in
// the tests with many keys (runKeyed), which key it was for.
type sample struct {
	at   time.Time
	took time.Duration
	code int
	key  int
}

// run calls do from workers goroutines until stop is closed, and returns every sample.
func run(workers int, stop <-chan struct{}, do func() int) []sample {
	out := make([][]sample, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				code := do()
				out[w] = append(out[w], sample{at: start, took: time.Since(start), code: code})
			}
		})
	}
	wg.Wait()
	return slices.Concat(out...)
}

// runKeyed is run for requests on n keys: do(i) sends a request for key i, and each worker
// goes through all the keys in turn, each starting at a key of its own.
func runKeyed(workers, n int, stop <-chan struct{}, do func(i int) int) []sample {
	out := make([][]sample, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w % n; ; i = (i + 1) % n {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				code := do(i)
				out[w] = append(out[w], sample{at: start, took: time.Since(start), code: code, key: i})
			}
		})
	}
	wg.Wait()
	return slices.Concat(out...)
}

// phase is what the samples started within [from, to) say.
type phase struct {
	name                   string
	n, ok, limited, failed int
	p50, p99, max          time.Duration
	from, to               time.Time
}

func summarize(name string, samples []sample, from, to time.Time) phase {
	p := phase{name: name, from: from, to: to}
	var lat []time.Duration
	for _, s := range samples {
		if s.at.Before(from) || !s.at.Before(to) {
			continue
		}
		p.n++
		switch {
		case s.code == 200:
			p.ok++
		case s.code == 429:
			p.limited++
		default:
			p.failed++
		}
		lat = append(lat, s.took)
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		p.p50 = lat[(len(lat)-1)*50/100]
		p.p99 = lat[(len(lat)-1)*99/100]
		p.max = lat[len(lat)-1]
	}
	return p
}

// log reports p, and the latency of the decisions d made within it.
func (p phase) log(t *testing.T, d phase) {
	t.Helper()
	t.Logf("%-6s %4.2fs: %5d requests, %4d ok, %5d limited, %d failed; latency p50 %v p99 %v max %v; decisions p50 %v p99 %v max %v",
		p.name, p.to.Sub(p.from).Seconds(), p.n, p.ok, p.limited, p.failed,
		p.p50.Round(time.Microsecond), p.p99.Round(time.Microsecond), p.max.Round(time.Microsecond),
		d.p50.Round(time.Microsecond), d.p99.Round(time.Microsecond), d.max.Round(time.Microsecond))
}
