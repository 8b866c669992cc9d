package distributed

import (
	_ "embed"
	"time"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// Every script takes one key, KEYS[1], the bucket's, and the same arguments:
//
//	ARGV[1]  rate: tokens per second (0 < rate <= MaxRate)
//	ARGV[2]  burst: the bucket's capacity (1 <= burst)
//	ARGV[3]  cost: tokens this request takes (1 <= cost <= burst)
//	ARGV[4]  the algorithm's own argument (args), or empty, or absent
//	ARGV[5]  absent, or the reserve of the request's priority (priority.Reserves.Tokens,
//	         0 <= reserve <= burst - cost): the request is decided as under a burst of
//	         burst - reserve, while the bucket's state and its expiry stay its own
//
// The clock is Redis TIME, so application servers' clocks never matter; with
// WithClientClock, the script of the caller's clock (scripts.go) takes two more, ARGV[6]
// "now" in whole microseconds since epoch and ARGV[7] the skew bound in milliseconds, by
// which keys outlive their state (ARGV[4] and [5] are then always present).
//
// and returns {allowed (1 or 0), remaining, retry-after µs, reset-after µs, delay µs (0 but
// for a shaper), now}, all integers (Redis would truncate a fractional Lua number); now is
// the instant of the decision in µs since epoch, the Result's Charge.At.
//
// A script's first write is the one that admits (SET, or the sliding log's ZADD), and a
// denial writes nothing: under maxmemory with noeviction, Redis refuses a command that may
// grow memory only while the script has written nothing, so a full Redis then refuses every
// admission with an OOM error instead of growing past its cap.

// algorithm is how the Redis backend runs one ratelimit.Algorithm.
type algorithm struct {
	tag     string     // names the algorithm in the bucket's key
	scripts scriptPair // decide one request atomically, on either clock
	// args, if not nil, appends the script's own arguments, from ARGV[5] on.
	args func(argv []any, limit ratelimit.Limit) []any
}

//go:embed gcra.lua
var gcraFile string

//go:embed fixedwindow.lua
var fixedWindowFile string

//go:embed slidingcounter.lua
var slidingCounterFile string

//go:embed warmup.lua
var warmupFile string

// The scripts' sources with their fragments in, but for the clock (see scripts.go).
var (
	gcraSource           = expand(gcraFile)
	fixedWindowSource    = expand(fixedWindowFile)
	slidingCounterSource = expand(slidingCounterFile)
	warmupSource         = expand(warmupFile)
)

// algorithms holds every algorithm this backend implements. Their tags name them in the keys
// of their buckets, so that one key under two algorithms is two buckets.
var algorithms = map[ratelimit.Algorithm]algorithm{
	ratelimit.TokenBucket:          {tag: "tb", scripts: newScriptPair(gcraSource)},
	ratelimit.FixedWindow:          {tag: "fw", scripts: newScriptPair(fixedWindowSource), args: windowArg},
	ratelimit.SlidingWindowLog:     {tag: "swl", scripts: newScriptPair(slidingLogSource), args: slidingLogArgs},
	ratelimit.SlidingWindowCounter: {tag: "swc", scripts: newScriptPair(slidingCounterSource), args: windowArg},
	ratelimit.LeakyBucket:          {tag: "lb", scripts: newScriptPair(leakyBucketSource)},
}

// warmup is how the Redis backend runs ratelimit.TokenBucket for a limit with a Warmup: a
// script of its own, whose key's tag is "tbw" and whose value holds two numbers, so that a
// bucket with a warm-up never shares a key or a value's format with a plain one.
var warmup = algorithm{tag: "tbw", scripts: newScriptPair(warmupSource), args: warmupArg}

// algorithmFor returns how the limiter runs limit: its algorithm, or the limiter's default
// for a limit that names none, or warmup for a token bucket with a warm-up (check has
// refused a warm-up with any other algorithm, and an algorithm this backend lacks), or the
// limiter's quota for a calendar quota. A limit
// that names the default and one that names none have one key: they are one bucket.
func (l *Limiter) algorithmFor(limit ratelimit.Limit) algorithm {
	if limit.Warmup != 0 {
		return warmup
	}
	if limit.Algorithm == ratelimit.CalendarQuota {
		if limit.KeepUsage {
			return l.keepQuota
		}
		return l.quota
	}
	if limit.KeepUsage {
		return keepAlgorithms[args.Resolve(limit, l.algorithm).Algorithm]
	}
	return algorithms[args.Resolve(limit, l.algorithm).Algorithm]
}

// warmupArg appends ARGV[4], the warm-up period in whole microseconds (Limit.Validate has
// checked that it is one).
func warmupArg(argv []any, limit ratelimit.Limit) []any {
	return append(argv, limit.Warmup.Microseconds())
}

// windowArg appends ARGV[4], the window W = Burst/Rate in whole microseconds, computed as
// the local backend computes it (check has validated it).
func windowArg(argv []any, limit ratelimit.Limit) []any {
	w, _ := args.Window(limit)
	return append(argv, w)
}

// epoch is the zero of the scripts' clock: their instants count microseconds since epoch.
var epoch = time.Date(2020, time.January, 1, 0, 0, 0, 0, time.UTC)
