-- Reserve on one bucket of a theoretical arrival time, the token bucket's (gcra.lua) or the
-- leaky bucket's (leakybucket.lua), atomically: book cost tokens now, for a slot that may come
-- later, if that slot comes within max_wait and the bucket is then at most burst tokens in
-- debt (settle.lua's bound, the server's ceiling); otherwise book nothing and say how long
-- the caller would have had to wait.
--
-- KEYS[1]  the bucket's key
-- ARGV[1]  the algorithm's tag: "tb" or "lb"
-- ARGV[2]  rate: tokens per second (0 < rate <= 1e6)
-- ARGV[3]  burst (1 <= burst <= 2^52)
-- ARGV[4]  cost (1 <= cost <= burst - reserve)
-- ARGV[5]  max_wait: the longest wait the caller accepts, in whole µs (>= 0)
-- ARGV[6]  the reserve of the request's priority (0 for none): the request is decided as on a
--          bucket of usable = burst - reserve tokens, as gcra.lua decides it
-- then, with the client's clock (WithClientClock), its two arguments (fragments/clock_client.lua)
--
-- Time is counted in tokens, as in gcra.lua. The wait, in tokens, is when the request
-- conforms: for the token bucket, when the TAT less usable has caught up, tat + cost - usable
-- - now (a request that conforms now waits 0); for the leaky bucket, its turn in the outflow,
-- tat - now, as leakybucket.lua's Delay. It leaves as the nearest whole µs.
--
-- Returns {booked (1 or 0), remaining, the wait in µs (the Delay when booked, the wait it
-- would have needed when not), reset-after µs, 1 if the ceiling refused it (0 otherwise),
-- now in µs since 2020}; or an INVALIDSTATE error reply, having written nothing.
-- @include clock

local rate, burst, cost = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local max_wait, usable = tonumber(ARGV[5]), burst - tonumber(ARGV[6])
local cap = 9007199254740992
local now = now_us * rate / 1000000
local tat = now
local stored = redis.pcall('GET', KEYS[1])
if stored then
  local v = tonumber(stored)
  if not (v and v > -cap and v < cap) then -- nil: an error reply, another type, text
    return redis.error_reply('INVALIDSTATE the key holds no value this script writes')
  end
  if v > now then
    tat = v
  end
end

local ahead = tat - now
local wait = ahead -- the leaky bucket's turn
if ARGV[1] == 'tb' then
  wait = math.max(ahead + cost - usable, 0)
end
local wait_us = math.min(math.floor(wait * 1000000 / rate + 0.5), cap)
local ceiling = ahead + cost > usable + burst -- more than burst tokens in debt

if ceiling or wait_us > max_wait then
  local reset = math.min(math.floor(ahead * 1000000 / rate + 0.5), cap)
  local refused = 0
  if ceiling then
    refused = 1
  end
  return {0, math.max(math.floor(usable - ahead), 0), wait_us, reset, refused, now_us}
end

tat = tat + cost
ahead = tat - now
local reset = math.min(math.floor(ahead * 1000000 / rate + 0.5), cap)
local ttl = math.max(math.ceil(reset / 1000), 1) + pad
redis.call('SET', KEYS[1], string.format('%.17g', tat), 'PX', ttl)
return {1, math.max(math.floor(usable - ahead), 0), wait_us, reset, 0, now_us}
