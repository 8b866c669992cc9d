package ratelimittest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/priority"
)

// harness is one fresh limiter under test, as a rule sees it.
type harness struct {
	// Limiter is the limiter under test, with no buckets yet, closed at the test's cleanup.
	Limiter ratelimit.Limiter
	// Advance moves the limiter's clock forward by d. The clock does not move otherwise.
	Advance func(d time.Duration)
	// CanWait says whether Limiter.Wait is implemented; if not, it returns
	// ratelimit.ErrNotSupported.
	CanWait bool
	// Algorithm is the algorithm Limiter was built with, its default.
	Algorithm ratelimit.Algorithm
	// Algorithms are all the algorithms the limiter implements (Harness.Algorithms): a limit
	// may name any of them.
	Algorithms []ratelimit.Algorithm
	// Reserves returns a limiter built like Limiter (same backend, algorithm and clock, no
	// buckets yet) but with the given priority reserves; nil unless Harness.Reserves.
	Reserves func(r priority.Reserves) ratelimit.Limiter
	// fresh returns another harness like this one, on a clock of its own.
	fresh func() harness
}

// capabilities are what a limiter turned out to implement.
type capabilities struct {
	multi, inspector, wait bool
	settle                 bool // a ratelimit.Settler (with an Inspector)
	// queue: Wait under a limit naming ratelimit.LeakyBucket joins its queue.
	queue bool
}

// suite is a group of rules run alike: in a bubble, or not.
type suite struct {
	name   string // "" for the rules of the algorithm and the common ones
	rules  []rule
	bubble bool // each rule in a testing/synctest bubble, on the system clock
}

// interleavingSeeds and interleavingOps size the random interleavings of every call (see
// checkInterleavings): four timelines of 400 calls per algorithm.
const interleavingSeeds, interleavingOps = 4, 400

// suites returns the rules that apply to a limiter of algorithm alg with capabilities c.
func suites(h Harness, alg ratelimit.Algorithm, c capabilities) []suite {
	if h.Clock == ClockUncontrolled {
		return []suite{{rules: clockFree}}
	}
	all := []suite{{rules: append(slices.Clone(rulesOf(alg)), common...)}}
	mixed := slices.Clone(mixedRules)
	if c.multi {
		all = append(all, suite{"Multi", multiRules, false})
		mixed = append(mixed, mixedMultiRules...)
	}
	all = append(all, suite{"Mixed", mixed, false})
	if c.inspector {
		all = append(all, suite{"Inspector", append(slices.Clone(inspectorRules), refundRulesOf(alg)...), false})
	}
	if c.settle && c.inspector {
		all = append(all, suite{"Settle", settleRulesOf(alg), false})
	}
	if h.Reserves {
		all = append(all, suite{"Priority", priorityRules, false})
	}
	warm := []rule{{"NotSupported", warmNotSupported}}
	if h.Warmup && alg == ratelimit.TokenBucket {
		warm = warmupRules
	}
	all = append(all, suite{"Warmup", warm, false})
	if h.Quotas && alg == h.algorithms()[0] {
		all = append(all, suite{"CalendarQuota", quotaRules, false})
		if h.KeepUsage {
			all = append(all, suite{"CalendarQuota/KeepUsage", []rule{{"CountCarries", quotaKeepUsage}}, false})
		}
	}
	all = append(all, keepSuite(h, alg)...)
	if c.multi && c.inspector {
		var rules []rule
		for seed := range uint64(interleavingSeeds) {
			rules = append(rules, rule{fmt.Sprint("Seed", seed), func(t testing.TB, h harness) {
				checkInterleavings(t, h, seed, interleavingOps)
			}})
		}
		all = append(all, suite{"Interleavings", rules, false})
	}
	if c.queue {
		all = append(all, suite{"QueueWait", queueRules, true})
	}
	return all
}

// probe makes one limiter of algorithm alg and finds out what it implements. Wait is
// supported unless a Wait for a token of a new bucket answers ratelimit.ErrNotSupported;
// and so is a Wait in a leaky bucket's queue, asked of a limit naming ratelimit.LeakyBucket
// when h implements it.
func probe(t testing.TB, h Harness, alg ratelimit.Algorithm) capabilities {
	t.Helper()
	require.NotNil(t, h.New, "Harness.New is required")
	require.NotEmpty(t, rulesOf(alg), "no rules for %v", alg)
	l := h.New(t, Config{Algorithm: alg, Clock: NewClock()})
	require.NotNil(t, l, "Harness.New returned nil")
	var c capabilities
	_, c.multi = ratelimit.As[ratelimit.MultiLimiter](l)
	_, c.inspector = ratelimit.As[ratelimit.Inspector](l)
	_, c.settle = ratelimit.As[ratelimit.Settler](l)
	err := l.Wait(context.Background(), "ratelimittest-probe", ratelimit.Limit{Rate: 1, Burst: 1})
	if !errors.Is(err, ratelimit.ErrNotSupported) {
		require.NoError(t, err, "Wait for the first token of a new bucket")
		c.wait = true
	}
	if slices.Contains(h.algorithms(), ratelimit.LeakyBucket) {
		// Another key: on a leaky bucket limiter the first probe's bucket is this one, full.
		err := l.Wait(context.Background(), "ratelimittest-probe-queue", ratelimit.Limit{Rate: 1, Burst: 1, Algorithm: ratelimit.LeakyBucket})
		if !errors.Is(err, ratelimit.ErrNotSupported) {
			require.NoError(t, err, "Wait for the first place in a new leaky bucket's queue")
			c.queue = true
		}
	}
	return c
}

// build returns the harness of one rule: a limiter made by h.New on a clock of its own
// (the system clock in a bubble).
func build(t testing.TB, h Harness, alg ratelimit.Algorithm, c capabilities, inBubble bool) harness {
	t.Helper()
	clock := NewClock()
	if inBubble {
		clock = systemClock()
	}
	cfg := Config{Algorithm: alg, Clock: clock}
	hh := harness{
		Limiter:    h.New(t, cfg),
		Advance:    clock.Advance,
		CanWait:    c.wait,
		Algorithm:  alg,
		Algorithms: h.algorithms(),
		fresh:      func() harness { return build(t, h, alg, c, inBubble) },
	}
	if h.Clock == ClockUncontrolled {
		hh.Advance = func(time.Duration) { require.FailNow(t, "a rule moved a clock the harness cannot move") }
	}
	if h.Reserves {
		hh.Reserves = func(r priority.Reserves) ratelimit.Limiter {
			cfg := cfg
			cfg.Reserves = r
			return h.New(t, cfg)
		}
	}
	return hh
}

// runner runs the groups and rules of walk: as subtests (Run), or recorded (Check).
type runner interface {
	// group runs f for the rules of a group; name "" is no group of its own.
	group(name string, f func(r runner))
	// setup runs f before a group's rules, and says whether it passed.
	setup(f func(t testing.TB)) bool
	// rule runs one rule, in a bubble of its own if asked.
	rule(name string, bubble bool, f func(t testing.TB))
}

// walk runs every rule that applies to h through r.
func walk(r runner, h Harness) {
	for _, alg := range h.algorithms() {
		r.group(alg.String(), func(r runner) {
			var c capabilities
			if !r.setup(func(t testing.TB) { c = probe(t, h, alg) }) {
				return
			}
			for _, s := range suites(h, alg, c) {
				r.group(s.name, func(r runner) {
					for _, rl := range s.rules {
						r.rule(rl.name, s.bubble, func(t testing.TB) { rl.run(t, build(t, h, alg, c, s.bubble)) })
					}
				})
			}
		})
	}
}

// Run runs, as subtests of t, every rule of the ratelimit contract that applies to the
// limiters h builds: for each of h.Algorithms, the rules of the algorithm (exact timelines,
// reference models) and the common ones (bad input, keys, concurrency, Wait, Close); the
// rules of ratelimit.MultiLimiter and ratelimit.Inspector when the limiter implements them,
// and random interleavings of every call when it implements both; the rules of limits naming
// their algorithm (ratelimit.Limit.Algorithm: each of h.Algorithms its own bucket, whatever
// the limiter's default, and AllowAll over several); the rules of priority reserves and
// warm-up and of calendar quotas as h declares them; the rules of a waiting Wait in a leaky
// bucket's queue when Wait is supported for a limit naming ratelimit.LeakyBucket, whatever the
// limiter's default. Each rule runs on a limiter of its own, made by h.New.
func Run(t *testing.T, h Harness) {
	t.Helper()
	walk(testRunner{t}, h)
}

type testRunner struct{ t *testing.T }

func (r testRunner) group(name string, f func(runner)) {
	if name == "" {
		f(r)
		return
	}
	r.t.Run(name, func(t *testing.T) { f(testRunner{t}) })
}

func (r testRunner) setup(f func(testing.TB)) bool {
	f(r.t)
	return !r.t.Failed()
}

func (r testRunner) rule(name string, bubble bool, f func(testing.TB)) {
	r.t.Run(name, func(t *testing.T) {
		if bubble {
			inBubble(t, func(t *testing.T) { f(t) })
			return
		}
		f(t)
	})
}
