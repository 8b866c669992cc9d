-- Lease: a chunk of a token bucket's tokens for one holder (package lease), atomically.
--
-- KEYS[1]  the leased bucket: a hash whose field "t" is the TAT, counted in tokens as in
--          gcra.lua (a clock reading of t us is worth t * rate / 1e6 tokens), and whose
--          other fields are the records of the holders, one per instance id
-- ARGV[1]  rate: tokens per second (0 < rate <= 1e6)
-- ARGV[2]  burst: the bucket's capacity (1 <= burst <= 2^52)
-- ARGV[3]  want: tokens asked for (0 <= want <= burst)
-- ARGV[4]  the holder's instance id (no space in it)
-- ARGV[5]  "seq held ret lease": four whole numbers. seq numbers the holder's requests for
--          this bucket, a retry repeats it; held is what the holder keeps of earlier chunks;
--          ret is what it gives back; lease is how long its record lasts, in us
--
-- A holder's record is "seq out expires granted remaining retry": out is what it holds
-- (held + granted), expires the instant (us since 2020) its lease ends, and the last three
-- the answer to seq, which a retry of seq gets again without being debited twice. A record
-- past its end is a holder that died: what it held goes back to the bucket, and the record
-- goes. A request with want = 0 and held = 0 is the holder leaving: its record goes too.
--
-- Returns {granted, remaining, retry-after us, reset-after us, replay, now}, all integers:
-- granted is up to want, whatever the bucket holds (a partial grant); remaining the whole
-- tokens left in the bucket; retry-after, when nothing was granted, how long until the
-- holder's share of the refill (rate over the holders with a record) covers want; replay 1
-- for the answer to a seq already decided, 2 for a seq older than the record's (nothing is
-- done); now the instant of the decision, us since 2020.
-- @include clock

local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local id = ARGV[4]
local seq, held, ret, lease = string.match(ARGV[5], '^(%d+) (%d+) (%d+) (%d+)$')
seq, held, ret, lease = tonumber(seq), tonumber(held), tonumber(ret), tonumber(lease)
local now = now_us * rate / 1000000

-- A key holding anything but a hash is something else's value: decided as a new bucket,
-- and replaced by it.
local fields = redis.pcall('HGETALL', KEYS[1])
if fields.err then
  redis.call('DEL', KEYS[1])
  fields = {}
end

local tat = now
local records = {}
for i = 1, #fields, 2 do
  if fields[i] == 't' then
    local v = tonumber(fields[i + 1])
    if v and v > now and v < 9007199254740992 then
      tat = v
    end
  else
    records[fields[i]] = fields[i + 1]
  end
end

-- The holders' records: the dead ones give back what they held, the live ones are counted.
local holders = 1 -- this one
local mine
for name, v in pairs(records) do
  local s, out, expires, g, rem, retry = string.match(v, '^(%d+) (%d+) (%d+) (%d+) (%d+) (%d+)$')
  if not s or tonumber(expires) <= now_us then
    if s then
      tat = math.max(tat - tonumber(out), now)
    end
    redis.call('HDEL', KEYS[1], name)
  elseif name == id then
    mine = {tonumber(s), tonumber(g), tonumber(rem), tonumber(retry)}
  else
    holders = holders + 1
  end
end

local function reset_us()
  return math.floor((tat - now) * 1000000 / rate + 0.5)
end

if mine and mine[1] == seq then
  return {mine[2], mine[3], mine[4], reset_us(), 1, now_us}
end
if mine and mine[1] > seq then
  return {0, 0, 0, reset_us(), 2, now_us}
end

-- What is given back first, then the grant: all the bucket holds, up to want.
tat = math.max(tat - ret, now)
local room = burst - (tat - now)
local granted = math.max(math.min(want, math.floor(room)), 0)
tat = tat + granted
room = room - granted
local remaining = math.max(math.floor(room), 0)
local retry = 0
if granted == 0 and want > 0 then
  retry = math.max(math.ceil((want - room) * holders * 1000000 / rate), 1)
end

if want == 0 and held == 0 then
  redis.call('HDEL', KEYS[1], id)
else
  redis.call('HSET', KEYS[1], id, string.format('%d %d %d %d %d %d', math.floor(seq),
    math.floor(held + granted), math.floor(now_us + lease), math.floor(granted),
    math.floor(remaining), math.floor(retry)))
end
redis.call('HSET', KEYS[1], 't', string.format('%.17g', tat))
-- Keep the bucket until it is full again and every record has ended.
local reset = reset_us()
redis.call('PEXPIRE', KEYS[1], math.max(math.ceil(reset / 1000), math.ceil(lease / 1000), 1) + pad)
return {granted, remaining, retry, reset, 0, now_us}
