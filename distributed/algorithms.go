package distributed

import (
	_ "embed"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
)

// Every script takes one key, KEYS[1], the bucket's, and the same first four arguments:
//
//	ARGV[1]  rate: tokens per second (0 < rate <= MaxRate)
//	ARGV[2]  burst: the bucket's capacity (1 <= burst)
//	ARGV[3]  cost: tokens this request takes (1 <= cost <= burst)
//	ARGV[4]  empty, or, for tests only, "now" in whole microseconds since epoch; when empty
//	         the clock is Redis TIME, so application servers' clocks never matter
//
// and returns {allowed (1 or 0), remaining, retry-after µs, reset-after µs}, all integers
// (Redis would truncate a fractional Lua number), with delay µs as a fifth for a shaper.

// algorithm is how the Redis backend runs one ratelimit.Algorithm.
type algorithm struct {
	tag    string        // names the algorithm in the bucket's key
	script *redis.Script // decides one request atomically
	// args, if not nil, appends the script's own arguments, from ARGV[5] on.
	args func(argv []any, limit ratelimit.Limit) []any
}

//go:embed gcra.lua
var gcraSource string

// algorithms holds every algorithm this backend implements.
var algorithms = map[ratelimit.Algorithm]algorithm{
	ratelimit.TokenBucket:      {tag: "tb", script: redis.NewScript(gcraSource)},
	ratelimit.SlidingWindowLog: {tag: "swl", script: redis.NewScript(slidingLogSource), args: slidingLogArgs},
	ratelimit.LeakyBucket:      {tag: "lb", script: redis.NewScript(leakyBucketSource)},
}

// epoch is the zero of the scripts' test clock (ARGV[4]) and of their TIME arithmetic.
var epoch = time.Date(2020, time.January, 1, 0, 0, 0, 0, time.UTC)
