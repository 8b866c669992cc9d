-- Leaky bucket as a shaper for one bucket, atomically: a queue of burst places drained at
-- rate. It is GCRA's virtual schedule (gcra.lua makes the same decisions) that also tells
-- each admitted request how long to wait for its turn, so that requests leave evenly spaced.
--
-- KEYS[1]  the bucket's key
-- ARGV[1]  rate: tokens per second (0 < rate <= 1e6)
-- ARGV[2]  burst: places in the queue (1 <= burst <= 2^52, burst / rate <= 2^53 us)
-- ARGV[3]  cost: places this request takes (1 <= cost <= burst)
-- ARGV[4]  absent or empty for Allow. For Wait, the longest delay in whole microseconds the
--          caller can accept (its deadline): a request whose turn comes later takes nothing.
-- ARGV[5]  absent, or the reserve: the places this request's priority must leave free in the
--          queue for higher ones (0 <= reserve <= burst - cost; ratelimit.Reserves.Tokens).
--          The request is decided as in a queue of usable = burst - reserve places; its delay
--          is its turn in the real queue, and the TAT and its expiry are the bucket's own.
--
-- Time is counted in tokens, as in gcra.lua: a reading of t microseconds is t * rate / 1e6
-- tokens. The emission interval T is then 1 and the queue's length tau is burst, so a
-- request of n tokens moves the schedule by exactly n: no fraction of T is ever rounded away.
-- The value stored is the TAT, the time at which the queue is empty again.
--
-- Returns {allowed (1 or 0), remaining places, retry-after us, reset-after us, delay us, now
-- in us since 2020 (the decision's instant, which a refund of it names)}, all integers. A
-- request refused only because its turn comes after ARGV[4] gets retry-after 0 and the delay
-- it would have had.

-- @include args
-- @include clock
-- @include tat

-- start: when the request's first token leaves, once the tokens queued before it have: the
-- TAT, never before now. A missing key is an empty queue, and so is a value no script of
-- this package writes: the request, first in an empty queue, is admitted and its SET
-- replaces the value.
local start = tat
-- The request fits when its last token leaves at most usable after now:
-- start + cost - now <= usable, tested as ahead <= room, where room is exact (gcra.lua says
-- why: summing first rounds near Burst = 2^52).
local ahead = start - now -- the queue before the request, in tokens
local room = usable - cost

-- Durations leave as whole microseconds, the nearest to a span of tokens, capped at 2^53
-- (285 years) so they stay exact. (Written out each time: a local function would cost a
-- closure per call.)
local cap = 9007199254740992
local wait = math.min(math.floor(ahead * 1000000 / rate + 0.5), cap)
-- Whole places left in the queue to this request's priority, with the TAT at start.
local remaining = math.floor(usable - ahead)
if remaining < 0 then
  remaining = 0 -- below the reserve, or Redis's clock stepped back
end

if ahead > room then
  -- Denied, nothing written: the request fits once the clock has caught up ahead - room
  -- tokens. Take the nearest microsecond, then step forward while this same arithmetic
  -- still refuses it, so that a caller coming back after exactly retry is let in.
  local retry = math.min(math.floor((ahead - room) * 1000000 / rate + 0.5), cap)
  for _ = 1, 3 do
    if retry >= cap or start - (now_us + retry) * rate / 1000000 <= room then
      break
    end
    retry = retry + 1
  end
  return {0, remaining, math.max(retry, 1), wait, 0, now_us}
end

-- Allowed: the request waits for its turn, start - now: wait, to the nearest microsecond as
-- the reset-after is, so that the next request's delay is this one's reset-after and
-- departures are T apart give or take one rounding. For Wait, a turn past the caller's
-- deadline takes nothing.
local max_delay = tonumber(ARGV[4])
if max_delay and wait > max_delay then
  return {0, remaining, 0, wait, wait, now_us}
end

-- Keep the key until the queue is empty; after that a missing key means the same.
local new = start + cost
local reset = math.min(math.floor((new - now) * 1000000 / rate + 0.5), cap)
local ttl = math.max(math.ceil(reset / 1000), 1) + pad
redis.call('SET', KEYS[1], string.format('%.17g', new), 'PX', ttl) -- as gcra.lua's
remaining = math.floor(usable - (new - now))
if remaining < 0 then
  remaining = 0
end
return {1, remaining, 0, reset, wait, now_us}
