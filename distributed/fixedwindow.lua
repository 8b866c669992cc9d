-- Fixed window for one bucket, atomically.
--
-- KEYS[1]  the bucket's key
-- ARGV[1]  rate (unused: the window below carries it)
-- ARGV[2]  burst: the most a window gives out (1 <= burst)
-- ARGV[3]  cost: tokens this request takes (1 <= cost <= burst)
-- ARGV[4]  the window W = burst/rate in whole microseconds (1 <= W <= 2^53), computed by the
--          caller exactly as the local backend computes it, so that both agree to the µs.
-- ARGV[5]  absent, or the reserve: the tokens this request's priority must leave in the window
--          for higher ones (0 <= reserve <= burst - cost; ratelimit.Reserves.Tokens)
--
-- Windows are aligned to the Unix epoch: window i covers [i*W, (i+1)*W) in Unix µs, so every
-- instance agrees on where each starts. A window admits a request for n while its count
-- plus n is at most usable = burst - reserve; a denial changes nothing. The window, the
-- stored count and its expiry are the bucket's own, whatever the reserve.
--
-- The value is "i:count", the window the count belongs to and the count. It is written only
-- on allow, and expires with its window (rounded up to the millisecond), so a bucket is one
-- key per window in effect while staying one declared key (Redis Cluster safe). A key read a
-- moment after its window ended carries another window's index
-- and counts as zero.
--
-- Returns {allowed (1 or 0), remaining, retry-after us, reset-after us, delay us (0), now in
-- us since 2020 (the decision's instant, which a refund of it names)}, all integers.

-- @include args
-- @include clock
-- @include window

-- A value this script cannot have written (not "i:count" with count <= burst: text, nan,
-- inf, another type) counts as zero, as a missing key does: the request, the window's first,
-- is admitted and its SET replaces the value (see gcra.lua).
local count = 0
local stored = redis.pcall('GET', KEYS[1])
if stored then
  local i, c
  if type(stored) == 'string' then
    i, c = string.match(stored, '^(%d+):(%d+)$')
  end
  c = tonumber(c)
  if c and c <= burst and tonumber(i) == index then
    count = c
  end
end

if count + cost <= usable then
  count = count + cost
  local ttl = math.max(math.ceil(left / 1000), 1) + pad
  -- %d, not tostring or "..": those print 14 significant digits, and an index has up to 16.
  redis.call('SET', KEYS[1], string.format('%d:%d', math.floor(index), math.floor(count)), 'PX', ttl)
  return {1, usable - count, 0, left, 0, now - 1577836800000000}
end

-- Denied: the request fits once the window has ended and the count starts again from zero
-- (cost <= usable), and not a microsecond earlier. Below the reserve nothing remains.
local reset = 0
if count > 0 then
  reset = left
end
return {0, math.max(usable - count, 0), left, reset, 0, now - 1577836800000000}
