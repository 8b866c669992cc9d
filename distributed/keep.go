package distributed

import (
	"strconv"
	"strings"
	"unsafe"

	"github.com/sluice-go/ratelimit"
	"github.com/sluice-go/ratelimit/internal/args"
)

// The buckets of limits with KeepUsage (ratelimit.Limit.KeepUsage) have keys without
// their numbers and scripts of their own, each made from its algorithm's script by the
// substitutions below, checked when the package loads (keepVariant panics on a pattern it
// does not find exactly once), so that the scripts of the other limits, their keys and
// their arguments stay as they are. local/keep.go does the same arithmetic:
//
//   - token and leaky buckets ("tbk", "lbk") store "tat rate": the TAT in tokens at the
//     rate of the last write, which refills the bucket until the next. Under another rate
//     a call reads the deficit at its own, a0 = tat − now·r0/10⁶: none is a full bucket;
//     more than the request leaves room for is a denial, decided at r0; otherwise the
//     bucket is decided as one whose TAT is now·rate/10⁶ + a0.
//   - fixed windows and sliding counters ("fwk", "swck") keep their counts, which may now
//     exceed a lowered burst: the value's check bounds them by MaxBurst instead.
//   - the sliding log ("swlk") keeps its entries, and a member scored −inf, "t:w", that
//     names its last admission and the window it was admitted under: the log is forgotten
//     once that window has passed, as its key expires then (which a test clock, whose
//     keys live an hour longer, would not reach).

// keepAlgorithms are the algorithms of limits with KeepUsage, by algorithm.
var keepAlgorithms = map[ratelimit.Algorithm]algorithm{
	ratelimit.TokenBucket:          {tag: "tbk", scripts: newScriptPair(keepGCRASource)},
	ratelimit.FixedWindow:          {tag: "fwk", scripts: newScriptPair(keepFixedWindowSource), args: windowArg},
	ratelimit.SlidingWindowLog:     {tag: "swlk", scripts: newScriptPair(keepSlidingLogSource), args: slidingLogArgs},
	ratelimit.SlidingWindowCounter: {tag: "swck", scripts: newScriptPair(keepSlidingCounterSource), args: windowArg},
	ratelimit.LeakyBucket:          {tag: "lbk", scripts: newScriptPair(keepLeakyBucketSource)},
}

// keepRead replaces the read of a TAT (the variable name, read by get) in gcra.lua and
// leakybucket.lua (fragments/tat.lua), whose rate, now_us, now, usable and cost it uses, and
// changes rate and now for a denial decided at the bucket's own rate.
const keepRead = `local NAME
do
  local t, r0
  local v = GET
  if type(v) == 'string' then
    t, r0 = string.match(v, '^(%S+) (%S+)$')
  end
  t, r0 = tonumber(t), tonumber(r0)
  if t and r0 and r0 > 0 and r0 <= 1000000 then
    NAME = t
    if r0 ~= rate then
      local a0 = t - now_us * r0 / 1000000
      if not (a0 > 0) then
        NAME = nil -- refilled at its own rate: a full bucket
      elseif a0 > usable - cost then
        rate, now = r0, now_us * r0 / 1000000 -- a denial, at the rate that refills it
      else
        NAME = now + a0
      end
    end
  end
end`

// keepRefundRead replaces refund_gcra.lua's read of the TAT: under another rate, the
// deficit moves to the call's, and a bucket its own rate has refilled gives nothing back.
const keepRefundRead = `local tat
  do
    local t, r0
    if type(stored) == 'string' then
      t, r0 = string.match(stored, '^(%S+) (%S+)$')
    end
    t, r0 = tonumber(t), tonumber(r0)
    if t and r0 and r0 > 0 and r0 <= 1000000 then
      tat = t
      local r1 = tonumber(a[1])
      if r0 ~= r1 then
        local a0 = t - now_us * r0 / 1000000
        if not (a0 > 0) then
          return nil -- full: nothing to give back
        end
        tat = now_us * r1 / 1000000 + a0
      end
    end
  end`

func keepReadOf(name, get string) string {
	return strings.NewReplacer("NAME", name, "GET", get).Replace(keepRead)
}

// keepWrite is the value a keep script writes for the TAT expr.
func keepWrite(expr string) string {
	return "string.format('%.17g %.17g', " + expr + ", rate)"
}

var (
	keepGCRASource = keepVariant(gcraSource,
		"local tat = tonumber(redis.pcall('GET', KEYS[1]))", keepReadOf("tat", "redis.pcall('GET', KEYS[1])"),
		"redis.call('SET', KEYS[1], string.format('%.17g', tat), 'PX', ttl)", "redis.call('SET', KEYS[1], "+keepWrite("tat")+", 'PX', ttl)")
	keepLeakyBucketSource = keepVariant(leakyBucketSource,
		"local tat = tonumber(redis.pcall('GET', KEYS[1]))", keepReadOf("tat", "redis.pcall('GET', KEYS[1])"),
		"redis.call('SET', KEYS[1], string.format('%.17g', new), 'PX', ttl)", "redis.call('SET', KEYS[1], "+keepWrite("new")+", 'PX', ttl)")
	keepRefundGCRASource = keepVariant(refundGCRASource,
		"local tat = tonumber(stored)", keepRefundRead,
		"redis.call('SET', key, string.format('%.17g', tat), 'PX', ttl)", "redis.call('SET', key, "+keepWrite("tat")+", 'PX', ttl)")
	keepFixedWindowSource = keepVariant(fixedWindowSource,
		"if c and c <= burst and tonumber(i) == index then", "if c and c <= 4503599627370496 and tonumber(i) == index then")
	// A quota's count carries as it is, above the Burst of the call too.
	keepQuotaSource = keepVariant(quotaSource,
		"if c and c <= burst and s <= now and now < e then", "if c and c <= 4503599627370496 and s <= now and now < e then")
	keepRefundQuotaSource = keepVariant(refundQuotaSource,
		"if not c or c > tonumber(a[2]) then", "if not c or c > 4503599627370496 then")
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

// appendKeepKey returns the Redis key of a bucket with KeepUsage, built in b's room: prefix, the
// caller's key and the tag, then, for a fixed window or a sliding counter, the window in µs, and
// for a calendar quota its period, as in "ratelimit:user:42:tbk", "ratelimit:user:42:fwk:60000000"
// or "ratelimit:user:42:cqk:day@Europe/Paris".
func (l *Limiter) appendKeepKey(b []byte, key, tag string, limit ratelimit.Limit) string {
	b = append(b, l.prefix...)
	b = append(b, key...)
	b = append(b, ':')
	b = append(b, tag...)
	switch a := args.Resolve(limit, l.algorithm).Algorithm; a {
	case ratelimit.FixedWindow, ratelimit.SlidingWindowCounter:
		w, _ := args.Window(limit)
		b = append(b, ':')
		b = strconv.AppendInt(b, w, 10)
	case ratelimit.CalendarQuota:
		b = append(b, ':')
		b = appendPeriod(b, limit.Period)
	}
	return unsafe.String(unsafe.SliceData(b), len(b)) // b is never written again
}
