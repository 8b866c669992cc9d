package distributed

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
)

//go:embed multi.lua
var multiSource string

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

// multiScripts holds, for every algorithm, the script of AllowAll, Peek, Refund and Reset
// (multi.lua), built from the algorithm's single-key script and its refund.
var multiScripts = map[ratelimit.Algorithm]*redis.Script{
	ratelimit.TokenBucket:          redis.NewScript(multiScript(gcraSource, refundGCRASource, false)),
	ratelimit.FixedWindow:          redis.NewScript(multiScript(fixedWindowSource, refundFixedWindowSource, false)),
	ratelimit.SlidingWindowLog:     redis.NewScript(multiScript(slidingLogSource, refundSlidingLogSource, true)),
	ratelimit.SlidingWindowCounter: redis.NewScript(multiScript(slidingCounterSource, refundSlidingCounterSource, false)),
	ratelimit.LeakyBucket:          redis.NewScript(multiScript(leakyBucketSource, refundGCRASource, false)),
}

// warmupMulti is multi.lua for token buckets with a warm-up, for Peek, Refund and Reset: a
// script of its own, since its buckets are another script's (warmup.lua). AllowAll refuses
// them (see checkAll), so that one script never has to decide both kinds.
var warmupMulti = redis.NewScript(multiScript(warmupSource, refundWarmupSource, false))

// writes are the commands by which the single-key scripts write. In decide they go through
// multi.lua's write, so that a first pass can decide every bucket without writing.
var writes = []string{"SET", "DEL", "ZADD", "ZREMRANGEBYSCORE", "PEXPIRE"}

// multiScript returns multi.lua with single, a single-key script, made into its function
// decide, and refund, the algorithm's refund function, in their places. redecide says that
// single's writes depend on their replies (the sliding log adds entries until ZADD has added
// them all), so that an admission is written by deciding again rather than by replaying the
// writes the first pass recorded. The substitutions are
// checked: a single-key script that no longer reads TIME as they expect, or writes with a
// command they do not know, panics here, when the package is loaded, and so in every test.
func multiScript(single, refund string, redecide bool) string {
	body := single
	if strings.Count(body, "redis.call('TIME')") != 1 {
		panic("distributed: a single-key script does not read TIME exactly once")
	}
	body = strings.Replace(body, "redis.call('TIME')", "clock()", 1)
	for _, cmd := range writes {
		body = strings.ReplaceAll(body, "redis.call('"+cmd+"'", "write('"+cmd+"'")
	}
	for _, cmd := range []string{"SET", "DEL", "ZADD", "ZREM", "ZREMRANGEBYSCORE", "ZREMRANGEBYRANK", "PEXPIRE", "EXPIRE", "INCR"} {
		if strings.Contains(body, "redis.call('"+cmd+"'") || strings.Contains(body, "redis.pcall('"+cmd+"'") {
			panic(fmt.Sprintf("distributed: a single-key script writes with %s outside write", cmd))
		}
	}
	decide := "local function decide(KEYS, ARGV)\n" + body + "\nend"
	src := multiSource
	fragments := map[string]string{
		"-- @decide":   decide,
		"-- @refund":   refund,
		"-- @redecide": fmt.Sprintf("local redecide = %t", redecide),
	}
	for marker, fragment := range fragments {
		if strings.Count(src, marker) != 1 {
			panic("distributed: multi.lua lacks " + marker)
		}
		src = strings.Replace(src, marker, fragment, 1)
	}
	return src
}
