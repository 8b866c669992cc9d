package distributed

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/sluice-go/ratelimit"
)

//go:embed multi.lua
var multiFile string

var multiSource = expand(multiFile)

//go:embed refund_gcra.lua
var refundGCRASource string

//go:embed refund_fixedwindow.lua
var refundFixedWindowSource string

//go:embed refund_slidingcounter.lua
var refundSlidingCounterSource string

//go:embed refund_slidinglog.lua
var refundSlidingLogSource string

//go:embed refund_warmup.lua
var refundWarmupSource string

// multi is the script of AllowAll, Peek and Refund (multi.lua), built from every
// algorithm's single-key script and its refund, so that one call decides buckets of
// different algorithms together, each by its own.
var multi = newScriptPair(multiScript(multiAlgorithms))

// multiAlgorithms are the algorithms of multi.lua (and of hold.lua), each under its tag.
var multiAlgorithms = []multiAlgorithm{
	{algorithms[ratelimit.TokenBucket].tag, gcraSource, refundGCRASource, false},
	{warmup.tag, warmupSource, refundWarmupSource, false},
	{algorithms[ratelimit.FixedWindow].tag, fixedWindowSource, refundFixedWindowSource, false},
	{algorithms[ratelimit.SlidingWindowLog].tag, slidingLogSource, refundSlidingLogSource, true},
	{algorithms[ratelimit.SlidingWindowCounter].tag, slidingCounterSource, refundSlidingCounterSource, false},
	{algorithms[ratelimit.LeakyBucket].tag, leakyBucketSource, refundGCRASource, false},
	{quotaTag, quotaSource, refundQuotaSource, false},
	{keepQuotaTag, keepQuotaSource, keepRefundQuotaSource, false},
	{keepAlgorithms[ratelimit.TokenBucket].tag, keepGCRASource, keepRefundGCRASource, false},
	{keepAlgorithms[ratelimit.FixedWindow].tag, keepFixedWindowSource, keepRefundFixedWindowSource, false},
	{keepAlgorithms[ratelimit.SlidingWindowLog].tag, keepSlidingLogSource, keepRefundSlidingLogSource, true},
	{keepAlgorithms[ratelimit.SlidingWindowCounter].tag, keepSlidingCounterSource, keepRefundSlidingCounterSource, false},
	{keepAlgorithms[ratelimit.LeakyBucket].tag, keepLeakyBucketSource, keepRefundGCRASource, false},
}

// multiAlgorithm is what multi.lua holds of one algorithm: the tag of its keys, its
// single-key script and its refund function. redecide says that single's writes depend on
// their replies (the sliding log adds entries until ZADD has added them all), so that an
// admission is written by deciding again rather than by replaying the writes the first
// pass recorded.
type multiAlgorithm struct {
	tag, single, refund string
	redecide            bool
}

// writes are the commands by which the single-key scripts write. In decide they go through
// multi.lua's write, so that a first pass can decide every bucket without writing.
var writes = []string{"SET", "DEL", "ZADD", "ZREMRANGEBYSCORE", "PEXPIRE"}

// multiScript returns multi.lua with, for each of algs, its single-key script made into a
// function, decide, and its refund function, in a table under its tag, each on the clock
// multi.lua reads once (fragments/clock_shared.lua); multi.lua's own clock line stays, for
// newScriptPair. The substitutions are checked: a single-key script that writes with a
// command they do not know panics here, when the package is loaded, and so in every test.
func multiScript(algs []multiAlgorithm) string { return assemble(multiSource, algs) }

// assemble is multiScript on the script base, which has the marker and a write function
// (settle.lua's as well as multi.lua's).
func assemble(base string, algs []multiAlgorithm) string {
	var fragment strings.Builder
	for _, a := range algs {
		body := clocked(a.single, sharedClock)
		for _, cmd := range writes {
			body = strings.ReplaceAll(body, "redis.call('"+cmd+"'", "write('"+cmd+"'")
		}
		for _, cmd := range []string{"SET", "DEL", "ZADD", "ZREM", "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK", "PEXPIRE", "EXPIRE", "INCR"} {
			if strings.Contains(body, "redis.call('"+cmd+"'") || strings.Contains(body, "redis.pcall('"+cmd+"'") {
				panic(fmt.Sprintf("distributed: a single-key script writes with %s outside write", cmd))
			}
		}
		// Each algorithm in a function of its own, so that its locals stay its own.
		fmt.Fprintf(&fragment, "algorithms[%q] = (function()\nlocal function decide(KEYS, ARGV)\n%s\nend\n%s\nreturn {decide = decide, refund = refund, redecide = %t}\nend)()\n",
			a.tag, body, a.refund, a.redecide)
	}
	const marker = "-- @algorithms"
	if strings.Count(base, marker) != 1 {
		panic("distributed: a script lacks " + marker)
	}
	return strings.Replace(base, marker, fragment.String(), 1)
}
