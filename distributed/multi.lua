-- Several buckets, atomically, each of its own algorithm: AllowAll, Peek and Refund.
-- The Go side (multiscript.go) builds this script once by putting in the marked fragment:
-- for every algorithm, named by the tag of its keys ("tb", "tbw", "fw", "swl", "swc",
-- "lb", "cq"), its single-key script turned into a function, decide, and its refund function.
-- decide is that script's own text, so every bucket is decided with the very arithmetic
-- AllowN uses; only three things differ, each a plain substitution:
--   * it runs as decide(KEYS, ARGV) on one bucket's key and arguments, and its return
--     statements return from the function;
--   * its writes (SET, DEL, ZADD, ZREMRANGEBYSCORE, PEXPIRE) go through write, which, while dry
--     is true, only records them, per bucket (and tells ZADD's loop that every entry was
--     added);
--   * its clock is the script's (fragments/clock_shared.lua), read once, so that every
--     bucket is decided at the same instant, checked and then written.
--
-- KEYS     the buckets' keys, all distinct, all in one hash slot
-- ARGV[1]  mode: "all", "peek" or "refund"
-- ARGV[2]  refund only: empty, or the instant the refunded request was charged, in
--          microseconds since 2020 (Result.Charge.At), so that a window algorithm gives back
--          to the window it charged (nothing once that window no longer counts) and the
--          sliding log drops the entries it added; empty refunds the bucket's current state
-- ARGV[3 + 6(i-1)] .. ARGV[8 + 6(i-1)]  KEYS[i]'s algorithm tag, then its rate, burst,
--          cost, the algorithm's own argument (its window or warm-up in µs, or empty) and
--          the reserve of the request's priority (0 for none): the single-key script's
--          ARGV[1..5]
-- then, with the client's clock (WithClientClock), its two arguments (fragments/clock_client.lua)
--
-- Returns {all allowed (1 or 0), now in µs since 2020 (the instant every bucket was decided
-- at, the Charge.At of an admission), then for each key the first five integers of its
-- answer: allowed, remaining, retry-after µs, reset-after µs, delay µs}. Or the first
-- error reply a bucket gives (INVALIDSTATE, or UNKNOWNALGORITHM for a tag this script does
-- not hold), before anything is written.
--
-- all:    decides every bucket without writing; if each admits, writes what each decision
--         wrote: the bucket's recorded writes, replayed in order, or, for an algorithm whose
--         writes depend on their replies (the sliding log's ZADD loop, marked by redecide),
--         by deciding the bucket again, writing. That second pass reads what the first read
--         (the keys are distinct and nothing was written to them yet), so it decides alike.
--         Either way the first write is an admitting one: under maxmemory with noeviction a
--         full Redis refuses it before anything is written. Each answer is what AllowN alone
--         would have said.
-- peek:   the first pass only: what AllowN would say, nothing written.
-- refund: gives each bucket its cost back (refund(key, argv, at or nil, now)), then answers as
--         peek does for one token.

local dry = true
local writes = {} -- per bucket: the writes its decision made while dry
local current -- the index of the bucket being decided
local function write(cmd, ...)
  if not dry then
    return redis.call(cmd, ...)
  end
  local w = writes[current]
  w[#w + 1] = {cmd, ...}
  if cmd == 'ZADD' then
    return (select('#', ...) - 2) / 2 -- key, NX, then score and member for each entry
  end
  return 0
end

-- @include clock

-- The algorithms by tag: each {decide = ..., refund = ..., redecide = true or false}.
local algorithms = {}

-- @algorithms

-- The algorithm of KEYS[i], and its single-key script's ARGV, with cost replaced when cost
-- is given.
local function args(i, cost)
  local b = 6 * i - 3
  return algorithms[ARGV[b]], {ARGV[b + 1], ARGV[b + 2], cost or ARGV[b + 3], ARGV[b + 4], ARGV[b + 5]}
end

local mode = ARGV[1]
local out = {1, now_us}

for i = 1, #KEYS do
  if not algorithms[ARGV[6 * i - 3]] then
    return redis.error_reply('UNKNOWNALGORITHM no algorithm has the tag ' .. tostring(ARGV[6 * i - 3]))
  end
end

local cost
if mode == 'refund' then
  local at = tonumber(ARGV[2])
  for i = 1, #KEYS do
    local alg, a = args(i)
    local err = alg.refund(KEYS[i], a, at, now_us)
    if err then
      return err
    end
  end
  cost = '1'
end

for i = 1, #KEYS do
  current = i
  writes[i] = {}
  local alg, a = args(i, cost)
  local r = alg.decide({KEYS[i]}, a)
  if r.err then
    return r
  end
  if r[1] ~= 1 then
    out[1] = 0
  end
  local b = 2 + 5 * (i - 1)
  for j = 1, 5 do
    out[b + j] = r[j] or 0
  end
end

if mode == 'all' and out[1] == 1 then
  dry = false
  for i = 1, #KEYS do
    local alg, a = args(i)
    if alg.redecide then
      alg.decide({KEYS[i]}, a)
    else
      for _, w in ipairs(writes[i]) do
        redis.call(unpack(w))
      end
    end
  end
end
return out
