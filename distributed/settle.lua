-- Settle's overrun on one bucket of a theoretical arrival time, the token bucket's (gcra.lua)
-- or the leaky bucket's (leakybucket.lua), atomically: charge cost tokens now, even past
-- empty, into a debt of at most burst tokens, then answer as a peek for one token does. The
-- Go side (settle.go) builds this script as multi.lua is built, by putting in the marked
-- fragment the decide function of each algorithm it holds, so that the answer is computed by
-- the very arithmetic AllowN uses. Their writes are only recorded, never made.
--
-- KEYS[1]  the bucket's key
-- ARGV[1]  the algorithm's tag: "tb" or "lb"
-- ARGV[2 .. 6]  the single-key script's ARGV[1 .. 5]: rate, burst, cost (the overrun,
--          1 <= cost <= 2 * burst), the algorithm's own argument (empty) and the reserve of
--          the priority the answer is given at (0 for none)
-- then, with the client's clock (WithClientClock), its two arguments (fragments/clock_client.lua)
--
-- Time is counted in tokens, as in gcra.lua: the TAT, never before now, moves ahead by cost,
-- and the bucket is then tat - now tokens short of full; short of more than 2 * burst (in
-- debt by more than burst) the charge is refused and nothing is written.
--
-- Returns {booked (1 or 0), now in µs since 2020, then the five integers of the peek's
-- answer: allowed, remaining, retry-after µs, reset-after µs, delay µs}; or an INVALIDSTATE
-- error reply, having written nothing, for a value the scripts cannot have written, or
-- UNKNOWNALGORITHM for a tag this script does not hold.

local writes = {}
local current
local function write(cmd, ...)
  local w = writes[current]
  w[#w + 1] = {cmd, ...}
  return 0
end

-- @include clock

local algorithms = {}

-- @algorithms

local alg = algorithms[ARGV[1]]
if not alg then
  return redis.error_reply('UNKNOWNALGORITHM no algorithm has the tag ' .. tostring(ARGV[1]))
end
local rate, burst, cost = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
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
local debited = tat + cost
local booked = 0
if debited - now <= 2 * burst then
  booked = 1
  -- Keep the key until the bucket is full again, as gcra.lua does.
  local reset = math.min(math.floor((debited - now) * 1000000 / rate + 0.5), cap)
  local ttl = math.max(math.ceil(reset / 1000), 1) + pad
  redis.call('SET', KEYS[1], string.format('%.17g', debited), 'PX', ttl)
end

current = 1
writes[1] = {}
local r = alg.decide(KEYS, {ARGV[2], ARGV[3], '1', ARGV[5], ARGV[6]})
if r.err then
  return r
end
return {booked, now_us, r[1] or 0, r[2] or 0, r[3] or 0, r[4] or 0, r[5] or 0}
