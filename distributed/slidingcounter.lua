-- Sliding window counter for one bucket, atomically.
--
-- KEYS[1]  the bucket's key
-- ARGV[1]  rate (unused: the window below carries it)
-- ARGV[2]  burst: the most the sliding window holds (1 <= burst)
-- ARGV[3]  cost: tokens this request takes (1 <= cost <= burst)
-- ARGV[4]  the window W = burst/rate in whole microseconds (1 <= W <= 2^53), computed by the
--          caller exactly as the local backend computes it, so that both agree to the µs.
-- ARGV[5]  absent, or the reserve: the tokens this request's priority must leave in the
--          sliding window for higher ones (0 <= reserve <= burst - cost;
--          ratelimit.Reserves.Tokens)
--
-- Fixed windows of W us are aligned to the Unix epoch, as in fixedwindow.lua. At x us into
-- window i, the sliding window (now - W, now] covers the last W - x us of window i-1 and the
-- first x of window i; assuming window i-1's requests were spread evenly it holds
--
--   est = prev * (W - x) / W + cur
--
-- and a request for n is admitted when est + n <= usable, tested as est <= usable - n: the
-- right side is exact, where the sum would round near Burst = 2^52 and admit half a token
-- too many. usable is burst - reserve: the decision, its remaining and its retry-after are
-- those of a limit of usable tokens; the windows, the counts and their expiry are the
-- bucket's own. The local backend computes est with the same double operations in the same
-- order, so both decide alike to the bit.
--
-- The value is "i:cur:prev", written only on allow, expiring at the end of window i+1, after
-- which neither count weighs anything.
--
-- Returns {allowed (1 or 0), remaining, retry-after us, reset-after us, delay us (0), now in
-- us since 2020 (the decision's instant, which a refund of it names)}, all integers.

-- @include args
-- @include clock
-- @include window
local w, x = window, elapsed -- the formulas' names

-- The counts as seen from window index: the stored window's, or, one window on, its count
-- as the previous one; anything older weighs nothing.
-- A value this script cannot have written (not "i:cur:prev" with both counts <= burst: text,
-- nan, inf, another type) weighs nothing, as a missing key: the request is admitted and its
-- SET replaces the value (see gcra.lua).
local prev, cur = 0, 0
local stored = redis.pcall('GET', KEYS[1])
if stored then
  local i, c, p
  if type(stored) == 'string' then
    i, c, p = string.match(stored, '^(%d+):(%d+):(%d+)$')
  end
  c, p = tonumber(c), tonumber(p)
  if c and c <= burst and p <= burst then
    i = tonumber(i)
    if i == index then
      prev, cur = p, c
    elseif i == index - 1 then
      prev = c
    end
  end
end

-- Durations leave as whole microseconds, capped at 2^53 (285 years), as the local
-- backend's are. Sums are ordered so that one that exceeds 2^53 only rounds once past it.
local cap = 9007199254740992

local room = usable - cost
local est = prev * (w - x) / w + cur
local allowed = est <= room
if allowed then
  cur = cur + cost
  est = est + cost
end

local remaining = math.floor(usable - est)
if remaining < 0 then
  remaining = 0
elseif remaining > usable then
  remaining = usable
end

-- est falls to zero at the end of the window after the last one that counted anything.
local reset = 0
if cur > 0 then
  reset = math.min(2 * w - x, cap)
elseif prev > 0 then
  reset = w - x
end

if allowed then
  local ttl = math.max(math.ceil((2 * w - x) / 1000), 1) + pad
  -- %d, not tostring or "..": those print 14 significant digits, and an index has up to 16.
  redis.call('SET', KEYS[1], string.format('%d:%d:%d', math.floor(index), math.floor(cur), math.floor(prev)), 'PX', ttl)
  return {1, remaining, 0, reset, 0, now - 1577836800000000}
end

-- Denied. A point in the future is a window k = 0, 1 or 2 after this one and an offset y in
-- it; seen from window k the counts are (prev, cur), (cur, 0), (0, 0), so est only falls as
-- time passes. Find the first point at which the request is admitted. (A local function
-- costs a closure each time the script makes it, which is why the admitting path has none;
-- this one is made on the deny path only.)
local function admits(k, y)
  local p, c = prev, cur
  if k == 1 then
    p, c = cur, 0
  elseif k == 2 then
    p, c = 0, 0
  end
  return p * (w - y) / w + c <= room
end

-- The guess solves est + cost = usable in real numbers: within this window when
-- cur + cost <= usable (prev * (W - y) / W <= usable - cur - cost), otherwise in the next
-- (cur * (W - y) / W <= usable - cost). It is rounded up and clamped to (x, W] or [0, W].
local k, y, lo, f
if cur + cost <= usable then
  k, lo = 0, x + 1
  f = math.ceil(w - (usable - cur - cost) * w / prev)
else
  k, lo = 1, 0
  f = math.ceil(w - (usable - cost) * w / cur)
end
if not (f >= lo) then
  y = lo
elseif f >= w then
  y = w
else
  y = f
end
if y == w then
  k, y = k + 1, 0
end

-- Step forward until the arithmetic above admits the guess, then back while it still
-- admits a microsecond earlier: a few steps either way, as in the local backend.
local steps = 4
for _ = 1, steps do
  if admits(k, y) then
    break
  end
  y = y + 1
  if y == w then
    k, y = k + 1, 0
  end
end
if not admits(k, y) then
  k, y = 2, 0 -- out of reach (windows of decades, huge bursts): est is 0 there
end
for _ = 1, steps do
  local bk, by = k, y - 1
  if by < 0 then
    bk, by = k - 1, w - 1
  end
  if bk < 0 or (bk == 0 and by <= x) or not admits(bk, by) then
    break
  end
  k, y = bk, by
end

local retry = math.min((k * w - x) + y, cap)
return {0, remaining, retry, reset, 0, now - 1577836800000000}
