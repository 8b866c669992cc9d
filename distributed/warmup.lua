-- A token bucket with a warm-up (ratelimit.Limit.Warmup) for one bucket, atomically: GCRA on a
-- "warm clock" that runs at a third of the rate after a cold start and speeds up linearly to
-- the full rate over the warm-up period, with a capacity that grows likewise from a third of
-- the burst to all of it. local/warmup.go does the same float64 operations in the same
-- order, so that both backends give the same answers to the bit; docs/algorithms.md has the
-- formulas and a worked table.
--
-- KEYS[1]  the bucket's key
-- ARGV[1]  rate: tokens per second (0 < rate <= 1e6)
-- ARGV[2]  burst: the bucket's capacity once warm (1 <= burst <= 2^52, burst / rate <= 2^53 us)
-- ARGV[3]  cost: tokens this request takes (1 <= cost <= burst)
-- ARGV[4]  p: the warm-up period in whole microseconds (1 <= p <= 2^53)
-- ARGV[5]  absent, or reserve: tokens a request of a lower priority must leave in the bucket
--          for higher ones (0 <= reserve <= burst - cost; ratelimit.Reserves.Tokens)
--
-- The value is "s:T": s, when the warm-up began, in microseconds since 2020 (an integer),
-- and T, the TAT on the warm clock, in tokens since s (a float, written with 17 significant
-- digits so that it reads back exactly). d microseconds into the warm-up:
--
--   W(d) = rate/1e6 * d(d + p)/(3p)         for d <= p: tokens earned since s, the
--        = rate/1e6 * (2p/3 + (d - p))      for d > p   integral of the rate ramp
--   tau(d) = max(1, burst * (p + 2d)/(3p)), burst from d = p on: what the bucket can hold
--
-- The bucket holds min(tau, burst - (T - W)) tokens. A request conforms when
-- ahead = max(T - W, burst - tau) <= usable - cost, and then T = max(T, W + (burst - tau)) + cost,
-- where usable = burst - reserve: the admission, its remaining and its retry-after are those
-- of a bucket of usable tokens; the warm clock, tau, T, the cold test and the expiry keep the
-- bucket's own burst.
-- A bucket is cold when the key is missing, or when max(T, W(p)) + burst <= W(d): it has
-- rested, since its warm-up ended and since it was last full, long enough to gain another
-- burst. A cold bucket starts its warm-up over (s = now, T = 0), and that is written even if
-- the request is then denied: a request for more than a third of the burst must see the ramp
-- move, or it would be denied for ever. That is the one write a denial makes.
--
-- Returns {allowed (1 or 0), remaining tokens, retry-after us, reset-after us, delay us (0),
-- now in us since 2020 (the decision's instant, which a refund of it names)}, all integers.

-- @include args
-- @include clock
local p = tonumber(ARGV[4])

local cap = 9007199254740992 -- 2^53: durations stop here, as in every script

-- W(d): warm microseconds, d(d + p)/(3p) and then one per microsecond, in tokens.
local function clock(d)
  local m = math.min(d, p)
  return (m * (m + p) / (3 * p) + (d - m)) * rate / 1000000
end

-- tau(d), at least 1, at most burst, and burst itself from p on (where the rounded formula
-- could fall short of it and deny a request for the whole burst for ever).
local function tolerance(d)
  if d >= p then
    return burst
  end
  return math.max(1, math.min(burst, burst * (p + 2 * d) / (3 * p)))
end

-- How far short of burst tokens the bucket is, d microseconds into the warm-up.
local function ahead_at(tat, d)
  return math.max(tat - clock(d), burst - tolerance(d))
end

-- Where W reads tokens, in real numbers: the root of d(d + p)/(3p) = a in its stable form,
-- or a + p/3 past p. It only guides the searches below, whose answers do not depend on it.
local function inverse(tokens)
  local a = math.max(tokens, 0) * 1000000 / rate
  if a <= 2 * p / 3 then
    return 6 * p * a / (math.sqrt(p * p + 12 * p * a) + p)
  end
  return a + p / 3
end

-- A guess of microseconds as a whole number within [lo, cap].
local function guess_us(us, lo)
  if not (us > lo) then -- nan too
    return lo
  end
  if us >= cap then
    return cap
  end
  return math.ceil(us)
end

-- The least whole y in (0, cap] at which ok(y) holds, given that it does not at 0 and never
-- stops holding once it does; cap if it holds nowhere before. W and tau never decrease, in
-- floats too, so every test below is of that kind. The search walks away from the guess in
-- doubling steps until it brackets the answer, then halves the bracket.
local function least(guess, ok)
  local lo = 0
  local hi = math.min(math.max(guess, 1), cap)
  if ok(hi) then
    local step = 1
    while hi - step > lo do
      if not ok(hi - step) then
        lo = hi - step
        break
      end
      hi = hi - step
      step = step * 2
    end
  else
    lo = hi
    local step = 1
    while true do
      if lo >= cap then
        return cap
      end
      local c = math.min(lo + step, cap)
      if ok(c) then
        hi = c
        break
      end
      lo = c
      step = step * 2
    end
  end
  while hi - lo > 1 do
    local mid = lo + math.floor((hi - lo) / 2)
    if ok(mid) then
      hi = mid
    else
      lo = mid
    end
  end
  return hi
end

-- A missing key is a cold bucket, and so is a value this script cannot have written: a cold
-- bucket writes whatever it decides, and that SET replaces the value (see gcra.lua).
local stored = redis.pcall('GET', KEYS[1])
local s, tat, d
if stored then
  local sv, tv
  if type(stored) == 'string' then
    sv, tv = string.match(stored, '^(%-?%d+):([^:]+)$')
  end
  s, tat = tonumber(sv), tonumber(tv)
  if s and tat and s > -cap and s < cap and tat > -cap and tat < cap then -- nil: an error
    d = math.max(now_us - s, 0) -- a clock that stepped back reads as the start of the warm-up
  else
    stored = false
  end
end
local restarted = false
if not stored or math.max(tat, clock(p)) + burst <= clock(d) then
  s, tat, d, restarted = now_us, 0, 0, true
end

local w = clock(d)
local tol = tolerance(d)
local room = usable - cost -- whole and exact, as gcra.lua's
local ahead = math.max(tat - w, burst - tol)
local allowed = ahead <= room
if allowed then
  tat = math.max(tat, w + (burst - tol)) + cost
  ahead = tat - w
end

local remaining = math.floor(usable - ahead)
if remaining < 0 then
  remaining = 0
end

-- From T <= W on the bucket holds all it can, tau.
local reset = 0
if tat > w then
  reset = least(guess_us(inverse(tat) - d, 0), function(y)
    return tat <= clock(d + y)
  end)
end

if allowed or restarted then
  -- Keep the key until the bucket is cold, when W reaches max(T, W(p)) + burst; a missing
  -- key means the same then. inverse is within microseconds of the float W: a millisecond
  -- more covers it.
  local ttl = math.max(math.ceil((inverse(math.max(tat, clock(p)) + burst) - d) / 1000) + 1, 1) + pad
  redis.call('SET', KEYS[1], string.format('%.17g:%.17g', s, tat), 'PX', ttl)
end
if allowed then
  return {1, remaining, 0, reset, 0, now_us}
end

-- Denied: the least microsecond at which the same test admits the request. A warm-up is not
-- started over before then (see the cold test), so this is when it will be admitted.
local need = cost + (burst - usable) -- the request's cost and its reserve
local at = inverse(tat - burst + need)
if need > 1 then
  at = math.max(at, math.min((3 * p * need / burst - p) / 2, p)) -- when tau reaches need
end
local retry = least(guess_us(at - d, 1), function(y)
  return ahead_at(tat, d + y) <= room
end)
return {0, remaining, retry, reset, 0, now_us}
