-- Holds: reservations in flight on one bucket of any algorithm, each recorded with an
-- expiry, atomically. A hold is an admission as AllowN makes it (so every later decision
-- counts it: usage + holds + requested <= burst) that is also recorded in KEYS[2], a sorted
-- set of the bucket's outstanding holds scored by the instant each expires. Settling a hold
-- removes its record and settles the charge to what the work cost; a hold nobody settles
-- (its holder crashed) is given back, as Refund with its charge gives back, by the first
-- hold or settle on the bucket at or after its expiry. The Go side (hold.go) builds this
-- script as multi.lua is built, by putting in the marked fragment every algorithm's decide
-- and refund functions, so that a hold decides, and an expired one is given back, by the
-- very arithmetic AllowN and Refund use.
--
-- KEYS[1]  the bucket's key
-- KEYS[2]  its holds, in the same hash slot: members "at:n:k" (a hold of n tokens charged at
--          at, µs since 2020; k tells apart holds of the same instant and cost)
-- ARGV[1]  mode: "hold", "settle", "refund" (a settle that gives nothing of a hold found
--          expired, and charges nothing), or "reset" (deletes the bucket and its holds)
-- ARGV[2 .. 7]  the bucket's algorithm tag, then its rate, burst, cost (hold: the tokens
--          held; settle: unused), own argument and reserve: multi.lua's six per key
-- ARGV[8]  the holds' TTL in µs (>= 1)
-- ARGV[9]  settle: the hold's instant (its Charge.At, µs since 2020)
-- ARGV[10] settle: the tokens it held (reserved)
-- ARGV[11] settle: the tokens the work cost (actual)
-- then, with the client's clock (WithClientClock), its two arguments (fragments/clock_client.lua)
--
-- A settle of a live hold: an underrun is given back as Refund gives it back, an overrun is
-- charged as Settle charges it (settle.lua: the token and leaky buckets only, with KeepUsage
-- too, into a debt of at most burst tokens). A hold found expired was given back already:
-- its settle charges the whole actual cost as an overrun.
--
-- Returns {code, now in µs since 2020, the five integers of the answer: allowed, remaining,
-- retry-after µs, reset-after µs, delay µs, live}: hold: code 1, the admission's answer;
-- settle: code 1 (settled), 0 (refused: the overrun would be more than burst tokens in debt)
-- or 2 (refused: an overrun on an algorithm that keeps no debt), a refusal having changed
-- nothing but the expired holds given back; then the answer of a peek for one token, and
-- live 1 if the hold was still outstanding. Or an INVALIDSTATE or UNKNOWNALGORITHM error
-- reply.

local dry = false
local writes = {}
local current
local function write(cmd, ...)
  if not dry then
    return redis.call(cmd, ...)
  end
  local w = writes[current]
  w[#w + 1] = {cmd, ...}
  if cmd == 'ZADD' then
    return (select('#', ...) - 2) / 2
  end
  return 0
end

-- @include clock

local algorithms = {}

-- @algorithms

local alg = algorithms[ARGV[2]]
if not alg then
  return redis.error_reply('UNKNOWNALGORITHM no algorithm has the tag ' .. tostring(ARGV[2]))
end
local function args(cost)
  return {ARGV[3], ARGV[4], cost, ARGV[6], ARGV[7]}
end
local ttl = tonumber(ARGV[8])

-- A reset deletes the bucket, full again, and its holds with it: a hold of the bucket before
-- the reset is never given back again when it expires.
if ARGV[1] == 'reset' then
  redis.call('DEL', KEYS[1], KEYS[2])
  return {1, now_us, 0, 0, 0, 0, 0, 0}
end
-- Instants leave as whole numbers: Lua's own conversion keeps only 14 digits.
local function int(x)
  return string.format('%d', x)
end

-- Give back every hold that has expired, oldest first.
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', int(now_us))
for _, m in ipairs(expired) do
  local at, n = string.match(m, '^(%-?%d+):(%d+):')
  local err = alg.refund(KEYS[1], args(n), tonumber(at), now_us)
  if err then
    return err
  end
end
if #expired > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', int(now_us))
end

-- Keep the set as long as its last hold.
local function keep()
  local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
  if last[2] then
    redis.call('PEXPIRE', KEYS[2], int(math.ceil((tonumber(last[2]) - now_us) / 1000) + 1 + pad))
  end
end

-- The answer of a peek for one token.
local function peek()
  dry = true
  current = 1
  writes[1] = {}
  return alg.decide({KEYS[1]}, args('1'))
end

if ARGV[1] == 'hold' then
  local r = alg.decide({KEYS[1]}, args(ARGV[5]))
  if r.err then
    return r
  end
  if r[1] == 1 then
    local prefix = int(now_us) .. ':' .. ARGV[5] .. ':'
    local k = 1
    while redis.call('ZSCORE', KEYS[2], prefix .. k) do
      k = k + 1
    end
    redis.call('ZADD', KEYS[2], int(now_us + ttl), prefix .. k)
    keep()
  end
  return {1, now_us, r[1] or 0, r[2] or 0, r[3] or 0, r[4] or 0, r[5] or 0, 0}
end

-- settle
local at, reserved, actual = tonumber(ARGV[9]), tonumber(ARGV[10]), tonumber(ARGV[11])
local member
if at + ttl > now_us then
  local prefix = ARGV[9] .. ':' .. ARGV[10] .. ':'
  for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], int(at + ttl), int(at + ttl))) do
    if string.sub(m, 1, #prefix) == prefix then
      member = m
      break
    end
  end
end
local live = 0
if member then
  live = 1
elseif at + ttl <= now_us then
  -- Expired, so given back already: a settle charges the whole cost, a refund nothing. (A
  -- hold settled before, and not expired, is settled again as Settle settles a charge.)
  if ARGV[1] == 'refund' then
    actual = reserved
  else
    reserved = 0
  end
end

local code = 1
if actual > reserved then
  -- The overrun, as settle.lua charges it: the TAT, never before now, moves ahead by it, to
  -- at most 2 * burst tokens past now.
  -- With KeepUsage ("tbk", "lbk") the value is "tat rate", its deficit carried to the
  -- call's rate as settle.go's keepSettleScript carries it, and written with the call's.
  local tag = ARGV[2]
  local kept = tag == 'tbk' or tag == 'lbk'
  if tag ~= 'tb' and tag ~= 'lb' and not kept then
    code = 2
  else
    local rate, burst = tonumber(ARGV[3]), tonumber(ARGV[4])
    local cap = 9007199254740992
    local now = now_us * rate / 1000000
    local tat = now
    local stored = redis.pcall('GET', KEYS[1])
    if stored then
      local v
      if kept then
-- @include keptat
      else
        v = tonumber(stored)
      end
      if not (v and v > -cap and v < cap) then
        return redis.error_reply('INVALIDSTATE the key holds no value this script writes')
      end
      if v > now then
        tat = v
      end
    end
    local debited = tat + actual - reserved
    if debited - now > 2 * burst then
      code = 0
    else
      local reset = math.min(math.floor((debited - now) * 1000000 / rate + 0.5), cap)
      local value = string.format('%.17g', debited)
      if kept then
        value = string.format('%.17g %.17g', debited, rate)
      end
      redis.call('SET', KEYS[1], value, 'PX', math.max(math.ceil(reset / 1000), 1) + pad)
    end
  end
elseif actual < reserved then
  local err = alg.refund(KEYS[1], args(tostring(reserved - actual)), at, now_us)
  if err then
    return err
  end
end
if code == 1 and member then
  redis.call('ZREM', KEYS[2], member)
  keep()
end
local r = peek()
if r.err then
  return r
end
return {code, now_us, r[1] or 0, r[2] or 0, r[3] or 0, r[4] or 0, r[5] or 0, live}
