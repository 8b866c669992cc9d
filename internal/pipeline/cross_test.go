package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/admin"
	"github.com/sluice-go/ratelimit/concurrency"
	cdistributed "github.com/sluice-go/ratelimit/concurrency/distributed"
	clocal "github.com/sluice-go/ratelimit/concurrency/local"
	"github.com/sluice-go/ratelimit/distributed"
	"github.com/sluice-go/ratelimit/fallback"
	"github.com/sluice-go/ratelimit/internal/bucket"
	"github.com/sluice-go/ratelimit/internal/pipeline"
	"github.com/sluice-go/ratelimit/internal/redistest"
	"github.com/sluice-go/ratelimit/local"
	"github.com/sluice-go/ratelimit/otelmetrics"
	"github.com/sluice-go/ratelimit/otelmetrics/otelmetricstest"
	"github.com/sluice-go/ratelimit/priority"
	"github.com/sluice-go/ratelimit/rules"
)

// The cross-feature test: every middleware (Gin, net/http, gRPC unary and stream) × backend
// (local; Redis; fallback healthy and degraded) × algorithm × every pair of the options
// below, each case a run of requests checked one by one against a reference model: the
// answer, the rate-limit headers, what was refunded (through what the next requests get),
// and, with an observer, the exact metric counts and the backend that decided.
//
// The model. Time stands still for the backends (the local clock is fake; the Redis limits
// refill one token a quarter), so every algorithm is a count per bucket: a request of cost
// c at priority p is admitted when every bucket has charged + c <= usable(p), where usable
// is the burst less the priority's reserve, and then takes c from each; a refund gives its
// cost back. Refunds go to every second charged request. One thing moves time: with
// refunds, on a local clock, every third charged request from the second on is slow. Its
// handler outlives two windows (the clock jumps by 2W), and before its refund another
// request (a direct call) takes one token from each of its buckets in the new window. The windows
// (fixed, sliding log, sliding counter) must give that refund to the window it charged, which has
// ended: nothing (and so must a calendar quota, whose period has ended); the token and leaky
// buckets, which have no windows, give it back to the bucket, never past full.
//
// With concurrency, the permits come from concurrency/local, and on the Redis backends also,
// in rows of their own ("conc-redis"), from concurrency/distributed: on the live Redis, or,
// degraded, on the dead one, where its share of the limit (1) decides as the local one does.

// feature is one option of the middlewares under test.
type feature uint16

const (
	withLimits   feature = 1 << iota // two limits, all or nothing
	withRefund                       // refund every second charged request
	withShadow                       // decide and report, never enforce
	withPriority                     // priorities Critical, Normal, Sheddable in turn
	withObserver                     // the OpenTelemetry observer
	withCost                         // costs 1, 2, 1, -1 in turn: -1 is a mistake of the program
	withConc                         // at most one request of the key in flight, no queue
	// the limits (and shadow, priority, concurrency) from a rules file
	withRules
	withKeep // KeepUsage, the tight limit's numbers changing every request
	// WithSettle, whose function settles nothing (ok false): a limiter that holds (Redis)
	// holds each estimate until the handler is done, then keeps it charged, so every
	// answer is the model's as without it
	withSettle
	numFeatures = 10
)

func (f feature) String() string {
	var names []string
	for i, n := range [...]string{"limits", "refund", "shadow", "priority", "observer", "cost", "concurrency", "rules", "keep", "settle"} {
		if f&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	if names == nil {
		return "none"
	}
	return strings.Join(names, "+")
}

// featureSets returns none, each feature alone, and each pair.
func featureSets() []feature {
	sets := []feature{0}
	for i := range numFeatures {
		sets = append(sets, 1<<i)
	}
	for i := range numFeatures {
		for j := i + 1; j < numFeatures; j++ {
			sets = append(sets, 1<<i|1<<j)
		}
	}
	return sets
}

type backendKind int

const (
	onLocal backendKind = iota
	onRedis
	onFallback         // Redis healthy behind fallback
	onFallbackDegraded // Redis unreachable: fallback's local share decides
	onRedisClientClock // Redis on this process's clock (distributed.WithClientClock)
)

func (b backendKind) String() string {
	return [...]string{"local", "redis", "fallback", "degraded", "redis-client-clock"}[b]
}

// decidedBy is the ratelimit.backend the metrics must report.
func (b backendKind) decidedBy() string {
	return [...]string{"local", "distributed", "distributed", "local", "distributed"}[b]
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

const (
	year     = 365 * 24 * time.Hour
	requests = 10
	// instances is the fallback's WithInstances: the degraded share is half the limit.
	instances = 2
)

// crossLimits returns the limits of a case: a tight one, and with withLimits a loose one;
// and the tight one's other numbers, which withKeep changes it to every second request (a
// window of the same length, a year, also once shared by fallback's two instances). Each
// refills its burst over a year, W, so that real time (which Redis reads) moves no token
// during a test. The leaky bucket, a shaper, would hold a request admitted behind another
// for 1/Rate: its bursts are 1, so that no request waits.
func crossLimits(alg ratelimit.Algorithm) (tight, loose, changed ratelimit.Limit) {
	per := func(n int) ratelimit.Limit { return ratelimit.Limit{Rate: float64(n) / year.Seconds(), Burst: n} }
	if alg == ratelimit.LeakyBucket {
		return per(1), ratelimit.Limit{Rate: 0.5 / year.Seconds(), Burst: 1}, ratelimit.Limit{Rate: 2 / year.Seconds(), Burst: 1}
	}
	if alg == ratelimit.CalendarQuota {
		// Periods of 12 months from January: 2026 holds the local clock and real time (which
		// Redis reads), and the local clock's jump of 2W lands in another period.
		years := ratelimit.Period{Unit: ratelimit.Month, Count: 12, Zone: "Europe/Paris"}
		return ratelimit.Quota(4, years), ratelimit.Quota(6, years), ratelimit.Quota(2, years)
	}
	return per(4), per(6), per(2)
}

// defaultAlgorithm is the limiters' default for the limits of alg: a quota names its own.
func defaultAlgorithm(alg ratelimit.Algorithm) ratelimit.Algorithm {
	if alg == ratelimit.CalendarQuota {
		return ratelimit.TokenBucket
	}
	return alg
}

// windowed reports whether alg keeps windows, to which a refund goes back.
func windowed(alg ratelimit.Algorithm) bool {
	return alg == ratelimit.FixedWindow || alg == ratelimit.SlidingWindowLog || alg == ratelimit.SlidingWindowCounter ||
		alg == ratelimit.CalendarQuota
}

// crossEnv holds what the cases of one backend and algorithm share.
type crossEnv struct {
	kind backendKind
	alg  ratelimit.Algorithm
	// onRedis, onFallback: the Redis limiter; onFallbackDegraded: one that cannot reach Redis
	redis  ratelimit.Limiter
	serial int // the case's number in its env, which names its key
	// with concurrency, the client of the rows whose permits are in Redis (the dead one when
	// degraded), and their keys' prefix; nil: the permits are concurrency/local's
	concRedis  *redis.Client
	concPrefix string
}

// concLimiter returns the concurrency limiter of one case, with no queue: concurrency/local,
// or concurrency/distributed on concRedis. A dead Redis answers each call at once (a refused
// loopback port, a bound of 1 ms): the limiter's breaker opens after three calls, and its
// share of the limit, 1 of 1 (WithInstances(instances)), then decides.
func (e *crossEnv) concLimiter(t *testing.T) concurrency.Limiter {
	if e.concRedis == nil {
		conc := clocal.New(clocal.WithQueue(-1, clocal.OldestFirst))
		t.Cleanup(func() { _ = conc.Close() })
		return conc
	}
	opts := []cdistributed.Option{cdistributed.WithPrefix(e.concPrefix), cdistributed.WithQueue(-1),
		cdistributed.WithInstances(instances)}
	if e.kind == onFallbackDegraded {
		opts = append(opts, cdistributed.WithTimeout(time.Millisecond))
	} else {
		// No call may time out on a loaded machine: its lease, released in the background,
		// would make the next request busy.
		opts = append(opts, cdistributed.WithTimeout(time.Minute), cdistributed.WithTTL(3*time.Minute))
	}
	conc, err := cdistributed.New(e.concRedis, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conc.Close() })
	return conc
}

// limiter returns the limiter of one case, and its clock when it has one to move.
func (e *crossEnv) limiter(t *testing.T) (ratelimit.Limiter, *fakeClock) {
	clock := &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	newLocal := func() *local.Limiter {
		l := local.New(local.WithAlgorithm(defaultAlgorithm(e.alg)), local.WithClock(clock.Now), local.WithReserves(priority.Reserves{}))
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	switch e.kind {
	case onLocal:
		return newLocal(), clock
	case onRedis, onRedisClientClock:
		return e.redis, nil
	case onFallback:
		return fallback.New(e.redis, newLocal(), fallback.WithInstances(instances), fallback.WithClock(clock.Now),
			fallback.WithReserves(priority.Reserves{})), nil
	default:
		return fallback.New(e.redis, newLocal(), fallback.WithInstances(instances), fallback.WithClock(clock.Now),
			fallback.WithReserves(priority.Reserves{}), fallback.WithErrorHandler(func(context.Context, string, error) {})), clock
	}
}

// deadRedis returns the address of a loopback port nothing listens on.
func deadRedis(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

func TestCrossFeatures(t *testing.T) {
	// The model is of decisions, not of their speed: no Redis call may time out on a loaded
	// machine (TestShadowBudget tests the budget).
	t.Cleanup(pipeline.SetShadowBudget(time.Minute))
	server := redistest.NewServer(t)
	live := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
	dead := redis.NewClient(&redis.Options{Addr: deadRedis(t), ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = live.Close(); _ = dead.Close() })
	// The key of every case is new, as is every bucket of it: the Redis limiters are shared.
	redisFor := func(client *redis.Client, alg ratelimit.Algorithm, opts ...distributed.Option) ratelimit.Limiter {
		l, err := distributed.New(client, append([]distributed.Option{distributed.WithAlgorithm(defaultAlgorithm(alg)),
			distributed.WithReserves(priority.Reserves{}), distributed.WithPrefix(fmt.Sprintf("cross:%d:", time.Now().UnixNano())),
			distributed.WithTimeout(time.Minute)}, opts...)...)
		require.NoError(t, err)
		return l
	}
	algorithms := []ratelimit.Algorithm{ratelimit.TokenBucket, ratelimit.FixedWindow, ratelimit.SlidingWindowLog,
		ratelimit.SlidingWindowCounter, ratelimit.LeakyBucket, ratelimit.CalendarQuota}
	// Every case runs in parallel with the others: each has a key of its own (serial), and
	// a limiter of its own but for the Redis limiter of its env, which is safe to share.
	for _, kind := range []backendKind{onLocal, onRedis, onRedisClientClock, onFallback, onFallbackDegraded} {
		for _, alg := range algorithms {
			env := &crossEnv{kind: kind, alg: alg}
			switch kind {
			case onRedis, onFallback:
				env.redis = redisFor(live, alg)
			case onRedisClientClock:
				env.redis = redisFor(live, alg, distributed.WithClientClock(0))
			case onFallbackDegraded:
				env.redis = redisFor(dead, alg)
			}
			for _, tg := range targets {
				for _, fs := range featureSets() {
					if fs&withCost != 0 && alg == ratelimit.LeakyBucket {
						continue // bursts of 1: see crossLimits
					}
					env.serial++
					c := *env
					name := fmt.Sprintf("%v/%v/%s/%v", kind, alg, tg.name, fs)
					t.Run(name, func(t *testing.T) {
						t.Parallel()
						c.run(t, tg, fs)
					})
					if fs&withConc == 0 || kind != onRedis && kind != onFallback && kind != onFallbackDegraded {
						continue
					}
					// The same case with its permits in Redis, and keys of its own: the serial's
					// parity, which picks the variants of rules cases, is the case's above.
					rc := *env
					rc.serial += 1 << 20
					rc.concRedis, rc.concPrefix = live, fmt.Sprintf("cross-conc:%d:", time.Now().UnixNano())
					if kind == onFallbackDegraded {
						rc.concRedis = dead
					}
					t.Run(name+"/conc-redis", func(t *testing.T) {
						t.Parallel()
						rc.run(t, tg, fs)
					})
				}
			}
		}
	}
}

// crossModel is the reference model of one case.
type crossModel struct {
	limits   []ratelimit.Limit // the limits asked for, tight first
	applied  []ratelimit.Limit // the limits enforced: the share of each while degraded
	charged  []int             // tokens taken from each bucket
	windowed bool
	reserves priority.Reserves
}

func (m *crossModel) usable(i int, p priority.Level) int {
	b := m.applied[i].Burst
	return b - m.reserves.Tokens(p, b)
}

// cost is what a request asking for c at p takes from bucket i: all of c, or, while
// degraded, at most what the share leaves p (fallback's clamp).
func (m *crossModel) cost(i, c int, p priority.Level) int {
	return min(c, m.usable(i, p))
}

// decide admits or denies a request and charges it when admitted.
func (m *crossModel) decide(c int, p priority.Level) bool {
	for i := range m.charged {
		if m.charged[i]+m.cost(i, c, p) > m.usable(i, p) {
			return false
		}
	}
	for i := range m.charged {
		m.charged[i] += m.cost(i, c, p)
	}
	return true
}

// binding returns the index of the limit headers report for an admitted request at p, when
// the buckets hold charged: the fewest remaining, the first of equals; and its remaining.
func (m *crossModel) binding(p priority.Level, charged []int) (int, int) {
	b, left := 0, m.usable(0, p)-charged[0]
	for i := 1; i < len(charged); i++ {
		if r := m.usable(i, p) - charged[i]; r < left {
			b, left = i, r
		}
	}
	return b, left
}

func (e *crossEnv) run(t *testing.T, tg target, fs feature) {
	key := fmt.Sprintf("cross-%d", e.serial)
	l, clock := e.limiter(t)
	tight, loose, changed := crossLimits(e.alg)
	if fs&(withKeep|withRules) != 0 { // the rules keep the usage of every limit of a policy
		tight.KeepUsage, loose.KeepUsage, changed.KeepUsage = true, true, true
	}
	m := &crossModel{limits: []ratelimit.Limit{tight}, windowed: windowed(e.alg)}
	if fs&withLimits != 0 {
		m.limits = append(m.limits, loose)
	}
	share := func(lim ratelimit.Limit) ratelimit.Limit {
		if e.kind == onFallbackDegraded {
			lim.Rate, lim.Burst = lim.Rate/instances, max(lim.Burst/instances, 1)
		}
		return lim
	}
	for _, lim := range m.limits {
		m.applied = append(m.applied, share(lim))
	}
	m.charged = make([]int, len(m.limits))
	names := []string{"tight", "loose"}

	// The request being sent: its index, priority and cost, read by the option functions.
	var (
		j    int
		prio = func() priority.Level {
			return []priority.Level{priority.Critical, priority.Normal, priority.Sheddable}[j%3]
		}
		cost     = func() int { return []int{1, 2, 1, -1}[j%4] }
		charges  int  // charged requests so far, in the model
		refunded bool // the model refunds the request being sent
		slow     bool // the model makes the request being sent slow
		asked    bool // the middleware asked whether to refund the request being sent
	)
	if fs&withPriority == 0 {
		prio = func() priority.Level { return priority.Critical }
	}
	if fs&withCost == 0 {
		cost = func() int { return 1 }
	}
	s := setup{limiter: l, name: "single"}
	if fs&withLimits != 0 {
		s.limitsFn = func() []ratelimit.Request {
			reqs := make([]ratelimit.Request, len(m.limits))
			for i, lim := range m.limits {
				reqs[i] = ratelimit.Request{Key: key, Limit: lim, N: cost(), Name: names[i]}
			}
			return reqs
		}
	} else {
		s.limit, s.key = tight, key
		if fs&withKeep != 0 {
			s.limitNow = func() ratelimit.Limit { return m.limits[0] }
		}
		if fs&withCost != 0 {
			s.cost = cost
		}
	}
	if fs&withPriority != 0 {
		s.priority = prio
	}
	shadow := fs&withShadow != 0
	s.shadow = shadow
	if fs&withSettle != 0 {
		s.settle = func() (int, bool) { return 0, false }
	}
	if fs&withRefund != 0 {
		s.refund = func() bool {
			asked = true
			if slow {
				// The handler outlived two windows; meanwhile another request took a token
				// from each bucket in the window that is now.
				clock.advance(2 * year)
				for i, lim := range m.limits {
					policy, index := s.name, 0
					if fs&withLimits != 0 {
						policy = names[i]
						// 0, or 1 for the second limit of one policy
						index = slices.Index(names, policy)
						if index == i {
							index = 0
						} else {
							index = i
						}
					}
					name := bucket.Name{Policy: policy, Limit: index, Keep: lim.KeepUsage, Shadow: shadow}
					res, err := l.AllowN(context.Background(), name.Key(key), lim, 1)
					require.NoError(t, err)
					require.True(t, res.Allowed)
				}
			}
			return refunded
		}
	}
	var reader interface {
		collect() otelmetricstest.Collected
	}
	if fs&withObserver != 0 {
		obs, r := otelmetricstest.NewObserver(t, otelmetrics.WithDurationSample(1))
		s.observer = obs
		reader = collector(func() otelmetricstest.Collected { return otelmetricstest.Collect(t, r) })
	}
	if fs&withLimits != 0 && fs&withCost != 0 && fs&withRules == 0 {
		// A cost function beside WithLimits, which gives costs, is refused at construction.
		assert.Panics(t, func() {
			tg.serve(t, setup{limiter: l, limits: []ratelimit.Request{{Key: key, Limit: tight}}, cost: cost})
		})
	}
	var reload func([]ratelimit.Limit)
	if fs&withRules != 0 {
		// Where the case's buckets are its own (a new local limiter; a dead Redis holds none),
		// every other case's policy names no key, and takes the middleware's: the same for
		// every case, as each case sends from one client address to one method.
		noKey := e.serial%2 == 0 && (e.kind == onLocal || e.kind == onFallbackDegraded)
		if reload = e.rulesCase(t, tg, fs, &s, key, m.limits, noKey); reload == nil {
			return
		}
		if noKey {
			key = tg.defaultKey
		}
		if fs&withPriority != 0 {
			prio = func() priority.Level { return priority.Sheddable } // the policy's wins
		}
		if fs&withLimits != 0 {
			names = []string{"pair", "pair"}
		}
	}
	if fs&withConc != 0 && fs&withRules == 0 {
		// Requests one after the other, each holding the key's only permit while it runs,
		// with no queue: a permit not released, or taken by a request the rate limit
		// denied, would make the next one busy.
		s.conc, s.inFlight = e.concLimiter(t), 1
		if fs&(withLimits|withShadow) != 0 {
			// A permit needs one key, and is held for real: refused at construction.
			assert.Panics(t, func() { tg.serve(t, s) })
			return
		}
	}
	do := tg.serve(t, s)

	wantCounts, wantPermits := map[string]int64{}, map[string]int64{}
	for j = range requests {
		if fs&withKeep != 0 {
			// The tight limit's numbers change; its bucket, and what it has charged, stay.
			m.limits[0] = tight
			if j%2 == 1 {
				m.limits[0] = changed
			}
			m.applied[0] = share(m.limits[0])
			if reload != nil {
				reload(m.limits) // the rules file changes
			}
		}
		p, c := prio(), cost()
		before := append([]int(nil), m.charged...)
		invalid := c < 1 // refused whatever the error policy, nothing charged
		admitted := !invalid && m.decide(c, p)
		decided := append([]int(nil), m.charged...) // what the headers tell
		refunded, slow, asked = false, false, false
		if admitted && fs&withRefund != 0 {
			charges++
			refunded = charges%2 == 0
			slow = clock != nil && charges%3 == 2
		}
		got := do(context.Background())
		if fs&withRefund != 0 {
			assert.Equal(t, admitted, asked, "the refund function is asked of every charged request, and only of those")
		}

		// The model, after the handler: a slow request moved to a new window, where the
		// direct call took one token; a refund gives back what the request took.
		if slow {
			for i := range m.charged {
				m.charged[i] = 1
			}
		}
		if refunded {
			for i := range m.charged {
				took := m.cost(i, c, p)
				if slow && m.windowed {
					took = 0 // its window has ended
				}
				m.charged[i] = max(m.charged[i]-took, 0)
			}
		}

		step := fmt.Sprintf("request %d (priority %v, cost %d, charged before %v)", j, p, c, before)
		switch {
		case shadow:
			assert.Equal(t, "ok", got.kind, step)
			assert.Empty(t, got.fields, step)
		case invalid:
			assert.Equal(t, "invalid", got.kind, step)
			assert.Empty(t, got.fields, step)
		case admitted:
			assert.Equal(t, "ok", got.kind, step)
			b, left := m.binding(p, decided)
			assert.Equal(t, strconv.Itoa(m.applied[b].Burst), got.fields["x-ratelimit-limit"], step)
			assert.Equal(t, strconv.Itoa(left), got.fields["x-ratelimit-remaining"], step)
		default:
			assert.Equal(t, "denied", got.kind, step)
			assert.NotEmpty(t, got.fields["retry-after"], step)
		}
		outcome := "denied"
		if admitted {
			outcome = "allowed"
		}
		policies := []string{"single"}
		if fs&withLimits != 0 {
			policies = names[:len(m.limits)]
		}
		for _, name := range policies {
			series := fmt.Sprintf("ratelimit.policy=%s,ratelimit.priority=%v,ratelimit.result=%s,ratelimit.shadow=%t",
				name, p, outcome, shadow)
			if invalid {
				series = fmt.Sprintf("error.type=invalid_input,ratelimit.policy=%s,ratelimit.priority=%v,ratelimit.result=error,ratelimit.shadow=%t",
					name, p, shadow)
			}
			wantCounts[series]++
		}
		if fs&withConc != 0 && admitted {
			// Each admitted request got its permit: the concurrency limit's own count.
			wantPermits["ratelimit.policy=single,ratelimit.result=allowed"]++
		}
	}
	if s.rules != nil {
		e.checkAdmin(t, l, s, rulesPolicy(fs), key, m)
	}
	if reader != nil {
		got := reader.collect()
		assert.Equal(t, wantCounts, got.Counts(t, "ratelimit.requests"))
		if fs&withConc != 0 {
			assert.Equal(t, wantPermits, got.Counts(t, "ratelimit.concurrency.requests"))
		} else {
			assert.NotContains(t, got, "ratelimit.concurrency.requests")
		}
		// WithDurationSample(1): the middleware times every decision, and the histogram
		// has each one that ratelimit.requests counts.
		var decisions int64
		for _, n := range wantCounts {
			decisions += n
		}
		var timed uint64
		for _, p := range got.Histogram(t) {
			timed += p.Count
		}
		assert.Equal(t, uint64(decisions), timed)
		for attrs := range got.Histogram(t) {
			if strings.Contains(attrs, "result=error") {
				continue // the arguments, refused by whichever part checked them first
			}
			if e.kind == onFallback && strings.Contains(attrs, "result=denied") &&
				strings.Contains(attrs, "ratelimit.backend=fallback") {
				continue // a denial answered by fallback's denial cache, without asking Redis
			}
			assert.Contains(t, attrs, "ratelimit.backend="+e.kind.decidedBy())
		}
	}
}

// collector adapts a function to the reader of a case's metrics.
type collector func() otelmetricstest.Collected

func (c collector) collect() otelmetricstest.Collected { return c() }

// rulesCase turns s into the setup of a case with withRules: its limits (one policy,
// "single", or with withLimits "pair" with both), keyed by key, with what the features
// say of shadow mode, priority and concurrency, come from a rules file (WithRules); the
// options that give the same in Go are not passed, but for WithPriorityFunc, which the
// policy's priority beats; with noKey, the policy names no key and takes the middleware's
// default; shadow mode is the policy's, or in every other case the middleware's. It returns the
// function that reloads the file with other limits, or nil when the case ends here: a cost function
// beside the rules, or a shadow policy with a concurrency, are refused.
func (e *crossEnv) rulesCase(t *testing.T, tg target, fs feature, s *setup, key string, limits []ratelimit.Limit, noKey bool) func([]ratelimit.Limit) {
	name := rulesPolicy(fs)
	policy := map[string]any{"key": "k"}
	if noKey {
		delete(policy, "key") // the middleware's default key
	}
	file := func(limits []ratelimit.Limit) []byte {
		var texts []string
		for _, l := range limits {
			texts = append(texts, l.String())
		}
		policy["limits"] = texts
		data, err := json.Marshal(map[string]any{"default": name, "policies": map[string]any{name: policy}})
		require.NoError(t, err)
		return data
	}
	// Shadow mode from the file, or (every other case) from the middleware's WithShadow over
	// a policy that does not say: the admin endpoint must read the same buckets either way.
	wide := fs&withShadow != 0 && e.serial%2 == 1
	if fs&withShadow != 0 && !wide {
		policy["shadow"] = true
	}
	if fs&withPriority != 0 {
		policy["priority"] = "sheddable"
	}
	var conc concurrency.Limiter
	if fs&withConc != 0 {
		policy["concurrency"] = 1
		conc = e.concLimiter(t)
	}
	rs := rules.New(rules.Registry{"k": func(rules.Request) (string, error) { return key, nil }})
	err := rs.Load("cross.json", file(limits))
	if fs&withConc != 0 && fs&withShadow != 0 {
		if !wide {
			require.ErrorIs(t, err, rules.ErrInvalid, "a shadow policy holds no permit")
			return nil
		}
		// The middleware's WithShadow beside the WithConcurrency that gives the permits.
		require.NoError(t, err)
		assert.Panics(t, func() {
			tg.serve(t, setup{limiter: s.limiter, rules: rs, shadow: true, conc: conc, inFlight: 1})
		})
		return nil
	}
	require.NoError(t, err)
	if fs&withConc != 0 {
		// The middleware holds the permits; the policy's concurrency (1) wins over its max.
		s.conc, s.inFlight = conc, 5
	}
	if fs&withCost != 0 {
		// The policy gives the cost: a cost function beside the rules is refused.
		assert.Panics(t, func() { tg.serve(t, setup{limiter: s.limiter, rules: rs, cost: func() int { return 1 }}) })
		return nil
	}
	s.rules, s.shadow, s.limitsFn, s.limit, s.key = rs, wide, nil, ratelimit.Limit{}, ""
	return func(limits []ratelimit.Limit) { require.NoError(t, rs.Load("cross.json", file(limits))) }
}

// rulesPolicy is the policy of a rules case.
func rulesPolicy(fs feature) string {
	if fs&withLimits != 0 {
		return "pair"
	}
	return "single"
}

// checkAdmin reads the case's buckets through the admin endpoint, as an operator would,
// after the requests: each limit's bucket holds what the model charged (in shadow mode, the
// shadow buckets: the file's shadow policy, or every policy with admin.WithShadow beside
// the middleware's WithShadow); a reset empties the usage of each.
func (e *crossEnv) checkAdmin(t *testing.T, l ratelimit.Limiter, s setup, policy, key string, m *crossModel) {
	t.Helper()
	var opts []admin.Option
	if s.shadow {
		opts = append(opts, admin.WithShadow())
	}
	h := admin.New(l, s.rules, func(*http.Request) bool { return true }, opts...)
	states := func(method, path string) []int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(method, "/policies/"+policy+"/keys/"+url.PathEscape(key)+path, nil))
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		var got []struct {
			Allowed   bool `json:"allowed"`
			Remaining int  `json:"remaining"`
		}
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &got))
		var remaining []int
		for _, st := range got {
			assert.Equal(t, st.Remaining > 0 || st.Allowed, st.Allowed)
			remaining = append(remaining, st.Remaining)
		}
		return remaining
	}
	// What a request of cost 1 would leave now: the burst less what was charged, less 1.
	var want, full []int
	for i := range m.charged {
		want = append(want, max(m.usable(i, priority.Critical)-m.charged[i]-1, 0))
		full = append(full, m.usable(i, priority.Critical)-1)
	}
	assert.Equal(t, want, states(http.MethodGet, ""), "admin: the buckets the middleware decided with")
	assert.Equal(t, full, states(http.MethodPost, "/reset"), "admin: reset")
}
