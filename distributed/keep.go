package distributed

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// The buckets of limits with KeepUsage (ratelimit.Limit.KeepUsage) have keys without
// their numbers and scripts of their own, each made from its algorithm's script by the
// substitutions below, checked when the package loads (keepVariant panics on a pattern it
// does not find exactly once), so that the scripts of the other limits, their keys and
// their arguments stay as they are. local/keep.go does the same arithmetic:
//
//   - token and leaky buckets ("tbk", "lbk") store "tat rate wrote": the TAT in tokens at
//     the rate of the last write and that write's instant (µs since 2020). A bucket whose
//     own rate has refilled it by now is full (its key may have expired); otherwise, under
//     another rate, the deficit at the last write, tat − wrote·r0/10⁶, becomes a TAT at
//     the new rate from that write on: wrote·rate/10⁶ + deficit.
//   - fixed windows and sliding counters ("fwk", "swck") keep their counts, which may now
//     exceed a lowered burst: the value's check bounds them by MaxBurst instead.
//   - the sliding log ("swlk") keeps its entries, and a member scored −inf, "t:w", that
//     names its last admission and the window it was admitted under: the log is forgotten
//     once that window has passed, as its key expires then (which the test clock, whose
//     keys live an hour, would not reach).

// keepAlgorithms are the algorithms of limits with KeepUsage, by algorithm.
var keepAlgorithms = map[ratelimit.Algorithm]algorithm{
	ratelimit.TokenBucket:          {tag: "tbk", script: redis.NewScript(keepGCRASource)},
	ratelimit.FixedWindow:          {tag: "fwk", script: redis.NewScript(keepFixedWindowSource), args: windowArg},
	ratelimit.SlidingWindowLog:     {tag: "swlk", script: redis.NewScript(keepSlidingLogSource), args: slidingLogArgs},
	ratelimit.SlidingWindowCounter: {tag: "swck", script: redis.NewScript(keepSlidingCounterSource), args: windowArg},
	ratelimit.LeakyBucket:          {tag: "lbk", script: redis.NewScript(keepLeakyBucketSource)},
}

// keepRead reads "tat rate wrote" from the string v into the variable name, or leaves it
// nil for a full bucket or a value a keep script cannot have written; rate and now_us are
// the script's.
const keepRead = `local %[1]s
do
  local t, r0, w
  if type(%[2]s) == 'string' then
    t, r0, w = string.match(%[2]s, '^(%%S+) (%%S+) (%%S+)$')
  end
  t, r0, w = tonumber(t), tonumber(r0), tonumber(w)
  if t and r0 and w and r0 > 0 and t > now_us * r0 / 1000000 then
    if r0 ~= %[3]s then
      t = w * %[3]s / 1000000 + (t - w * r0 / 1000000)
    end
    %[1]s = t
  end
end`

// keepWrite is the value a keep script writes for the TAT expr.
func keepWrite(expr, rate string) string {
	return "string.format('%.17g %.17g %.0f', " + expr + ", " + rate + ", now_us)"
}

func keepReadOf(name, value, rate string) string {
	return strings.NewReplacer("%[1]s", name, "%[2]s", value, "%[3]s", rate, "%%", "%").Replace(keepRead)
}

var (
	keepGCRASource = keepVariant(gcraSource,
		"local tat = tonumber(redis.pcall('GET', KEYS[1]))", keepReadOf("tat", "redis.pcall('GET', KEYS[1])", "rate"),
		"redis.call('SET', KEYS[1], tat, 'PX', ttl)", "redis.call('SET', KEYS[1], "+keepWrite("tat", "rate")+", 'PX', ttl)")
	keepLeakyBucketSource = keepVariant(leakyBucketSource,
		"local start = tonumber(redis.pcall('GET', KEYS[1]))", keepReadOf("start", "redis.pcall('GET', KEYS[1])", "rate"),
		"redis.call('SET', KEYS[1], new, 'PX', ttl)", "redis.call('SET', KEYS[1], "+keepWrite("new", "rate")+", 'PX', ttl)")
	// refund_gcra.lua's value may be full already: nothing to give back.
	keepRefundGCRASource = keepVariant(refundGCRASource,
		"local tat = tonumber(stored)", "local rate = tonumber(a[1])\n"+keepReadOf("tat", "stored", "rate")+
			"\n  if tat == nil and stored and type(stored) == 'string' and string.match(stored, '^%S+ %S+ %S+$') then\n    return nil\n  end",
		"local rate = tonumber(a[1])\n  local now", "local now",
		"redis.call('SET', key, tat, 'PX', ttl)", "redis.call('SET', key, "+keepWrite("tat", "rate")+", 'PX', ttl)")
	keepFixedWindowSource = keepVariant(fixedWindowSource,
		"if c and c <= burst and tonumber(i) == index then", "if c and c <= 4503599627370496 and tonumber(i) == index then")
	keepRefundFixedWindowSource = keepVariant(refundFixedWindowSource,
		"if not c or c > tonumber(a[2]) then", "if not c or c > 4503599627370496 then")
	keepSlidingCounterSource = keepVariant(slidingCounterSource,
		"if c and c <= burst and p <= burst then", "if c and c <= 4503599627370496 and p <= 4503599627370496 then")
	keepRefundSlidingCounterSource = keepVariant(refundSlidingCounterSource,
		"if not c or c > burst or p > burst then", "if not c or c > 4503599627370496 or p > 4503599627370496 then")
	keepSlidingLogSource = keepVariant(slidingLogSource,
		"local first = now - window + 1\n", `local first = now - window + 1
-- KeepUsage: forgotten once the window of the last admission has passed since it.
local forgotten = false
do
  local mark = redis.pcall('ZRANGEBYSCORE', KEYS[1], '-inf', '-inf', 'LIMIT', 0, 1)
  if type(mark) == 'table' and mark[1] then
    local t, w = string.match(mark[1], '^(%d+):(%d+)$')
    if t and tonumber(t) + tonumber(w) <= now then
      forgotten, first = true, 9007199254740992
    end
  end
end
`,
		"redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)", `if forgotten then
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('(%.0f', now))
  else
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '(-inf', now - window)
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '-inf')
  end
  redis.call('ZADD', KEYS[1], '-inf', string.format('%.0f:%.0f', now, window))`)
	keepRefundSlidingLogSource = keepVariant(refundSlidingLogSource,
		"local oldest = string.format('(%.0f', now - window) -- an entry exactly W old has left", `local oldest = string.format('(%.0f', now - window) -- an entry exactly W old has left
  local mark = redis.pcall('ZRANGEBYSCORE', key, '-inf', '-inf', 'LIMIT', 0, 1)
  if type(mark) == 'table' and mark[1] then
    local t, w = string.match(mark[1], '^(%d+):(%d+)$')
    if t and tonumber(t) + tonumber(w) <= now then
      return nil -- forgotten: nothing to give back
    end
  end`)
)

// keepVariant returns src with each pair of pairs, old then new, replaced; it panics if an
// old one is not in src exactly once.
func keepVariant(src string, pairs ...string) string {
	for i := 0; i < len(pairs); i += 2 {
		if n := strings.Count(src, pairs[i]); n != 1 {
			panic("distributed: keepVariant: " + strconv.Itoa(n) + " × " + strconv.Quote(pairs[i]))
		}
		src = strings.Replace(src, pairs[i], pairs[i+1], 1)
	}
	return src
}

// keepKey returns the Redis key of a bucket with KeepUsage: prefix, the caller's key and
// the tag, then, for a fixed window or a sliding counter, the window in µs, as in
// "ratelimit:user:42:tbk" or "ratelimit:user:42:fwk:60000000".
func (l *Limiter) keepKey(key, tag string, limit ratelimit.Limit) string {
	b := make([]byte, 0, len(l.prefix)+len(key)+len(tag)+20)
	b = append(b, l.prefix...)
	b = append(b, key...)
	b = append(b, ':')
	b = append(b, tag...)
	if a := args.Resolve(limit, l.algorithm).Algorithm; a == ratelimit.FixedWindow || a == ratelimit.SlidingWindowCounter {
		w, _ := args.Window(limit)
		b = append(b, ':')
		b = strconv.AppendInt(b, w, 10)
	}
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is never written again
}
