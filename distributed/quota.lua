-- Calendar quota for one bucket, atomically: at most burst per period of the calendar.
--
-- KEYS[1]  the bucket's key
-- ARGV[1]  rate (unused: a quota has none)
-- ARGV[2]  burst: the quota, the most a period gives out (1 <= burst)
-- ARGV[3]  cost: tokens this request takes (1 <= cost <= burst)
-- ARGV[4]  "b0:b1:b2:b3": three periods in a row, in Unix microseconds, as the caller's time
--          zone database places them around the caller's clock: [b0, b1) the one before,
--          [b1, b2) the current one, [b2, b3) the next. Lua has no time zones; the caller
--          computes them exactly as the local backend does.
-- ARGV[5]  absent, or the reserve: the tokens this request's priority must leave in the period
--          for higher ones (0 <= reserve <= burst - cost; ratelimit.Reserves.Tokens)
--
-- The period is the one of the three that holds Redis's now: a caller's clock off by less
-- than a period still gets the right one. Should none hold it, the script refuses with a
-- CLOCK error, having written nothing: the caller's clock is off by more than a period.
--
-- The value is "start:end:count", the period the count belongs to, in Unix µs, and the
-- count. It is written only on allow and expires with its period (rounded up to the
-- millisecond): one small key per (bucket, period). A stored period that holds now is the
-- period, whatever the caller computed: callers whose databases disagree (an outdated one)
-- share the first writer's period until it ends rather than zeroing each other's counts.
-- A stored period that does not hold now counts as zero, as a missing key does.
--
-- Returns {allowed (1 or 0), remaining, retry-after us, reset-after us, delay us (0), now in
-- us since 2020 (the decision's instant, which a refund of it names)}, all integers.

-- @include args
-- @include clock
local now = now_us + 1577836800000000 -- periods are in Unix microseconds

local b0, b1, b2, b3 = string.match(ARGV[4], '^(%d+):(%d+):(%d+):(%d+)$')
b0, b1, b2, b3 = tonumber(b0), tonumber(b1), tonumber(b2), tonumber(b3)
local start, finish
if b1 <= now and now < b2 then
  start, finish = b1, b2
elseif b0 <= now and now < b1 then
  start, finish = b0, b1
elseif b2 <= now and now < b3 then
  start, finish = b2, b3
else
  return redis.error_reply('CLOCK the caller computed periods around a time more than a period away from the Redis clock')
end

-- A value this script cannot have written counts as zero, as a missing key does: the
-- request, the period's first, is admitted and its SET replaces the value (see gcra.lua).
local count = 0
local stored = redis.pcall('GET', KEYS[1])
if stored then
  local s, e, c
  if type(stored) == 'string' then
    s, e, c = string.match(stored, '^(%d+):(%d+):(%d+)$')
  end
  s, e, c = tonumber(s), tonumber(e), tonumber(c)
  if c and c <= burst and s <= now and now < e then
    start, finish, count = s, e, c
  end
end
local left = finish - now -- us until the period ends

if count + cost <= usable then
  count = count + cost
  local ttl = math.max(math.ceil(left / 1000), 1) + pad
  -- %d, not tostring or "..": those print 14 significant digits, and an instant has 16.
  redis.call('SET', KEYS[1], string.format('%d:%d:%d', math.floor(start), math.floor(finish), math.floor(count)), 'PX', ttl)
  return {1, usable - count, 0, left, 0, now - 1577836800000000}
end

-- Denied: the request fits once the period has ended and the count starts again from zero
-- (cost <= usable), and not a microsecond earlier. Below the reserve nothing remains.
local reset = 0
if count > 0 then
  reset = left
end
return {0, math.max(usable - count, 0), left, reset, 0, now - 1577836800000000}
