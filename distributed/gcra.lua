-- GCRA (the token bucket as a "theoretical arrival time") for one bucket, atomically.
--
-- KEYS[1]  the bucket's key
-- ARGV[1]  rate: tokens per second (0 < rate <= 1e6)
-- ARGV[2]  burst: the bucket's capacity (1 <= burst <= 2^52, burst / rate <= 2^53 us)
-- ARGV[3]  cost: tokens this request takes (1 <= cost <= burst)
-- ARGV[4]  unused (the place of the other algorithms' own argument)
-- ARGV[5]  absent, or the reserve: the tokens this request's priority must leave in the bucket
--          for higher ones (0 <= reserve <= burst - cost; ratelimit.Reserves.Tokens)
--
-- Time is counted in tokens: a clock reading t microseconds is worth t * rate / 1e6 tokens.
-- In those units the emission interval T is 1 and the tolerance tau is burst, so taking a
-- token adds exactly 1 to the TAT: no fraction of an interval is ever rounded away, whatever
-- the rate. (A TAT kept in whole microseconds would round 1e6/rate on every request: at
-- 300,000/s, T = 3.33 us would become 3 us and the bucket would admit 11% too much.)
-- The TAT is stored as a float: now plus at most tau, below 2^53 tokens until centuries from
-- now, and resolving a microsecond or two even when tau is 2^53 us, the longest allowed.
--
-- Returns {allowed (1 or 0), remaining tokens, retry-after us, reset-after us, delay us (0),
-- now in us since 2020 (the decision's instant, which a refund of it names)}, all integers:
-- Redis would truncate a fractional Lua number.

-- The request is decided as on a bucket of usable = burst - reserve tokens: admitted while
-- it leaves reserve tokens in the bucket, told to retry when it would, its remaining counted
-- above the reserve. The TAT and its expiry are the bucket's own: no burst appears in them.
-- @include args
-- @include clock
-- @include tat

-- Taking cost tokens moves the TAT by cost intervals; the request conforms when the new TAT
-- is at most tau ahead of now: tat + cost - now <= usable (burst, for a request that keeps no
-- reserve), tested as ahead <= room, where room is a whole number and exact. Summing first would round once more: near Burst = 2^52
-- a float64 holds no fraction, and the rounded sum admitted a request right after the
-- bucket was drained.
local ahead = tat - now -- how far the TAT runs ahead of now: what the bucket is missing
local room = usable - cost
local allowed = ahead <= room
if allowed then
  tat = tat + cost
  ahead = tat - now
end

local remaining = math.floor(usable - ahead)
if remaining < 0 then
  remaining = 0 -- below the reserve, or Redis's clock stepped back
end

-- Durations leave as whole microseconds, capped at 2^53 (285 years) so they stay exact.
local cap = 9007199254740992
local reset = math.min(math.floor(ahead * 1000000 / rate + 0.5), cap)

if allowed then
  -- Keep the key until the bucket is full again; after that a missing key means the same.
  local ttl = math.max(math.ceil(reset / 1000), 1) + pad
  -- %.17g: the TAT reads back exactly, and prints alike on Lua 5.1 and 5.4.
  redis.call('SET', KEYS[1], string.format('%.17g', tat), 'PX', ttl)
  return {1, remaining, 0, reset, 0, now_us}
end

-- Denied: nothing is written. The request would conform once now has caught up ahead - room
-- tokens. Take the nearest microsecond, then step forward until this same arithmetic admits
-- it, so that a caller coming back after exactly retry is let in.
local retry = math.min(math.floor((ahead - room) * 1000000 / rate + 0.5), cap)
if retry < cap then
  for _ = 1, 3 do
    if tat - (now_us + retry) * rate / 1000000 <= room then
      break
    end
    retry = retry + 1
  end
end
return {0, remaining, math.max(retry, 1), reset, 0, now_us}
