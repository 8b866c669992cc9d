-- Grants a permit of one key if fewer than max live leases are held, atomically.
--
-- KEYS[1]  the key's sorted set: one member per permit, named by its id, scored by the end of
--          its lease in whole microseconds since 2020-01-01T00:00:00Z on the Redis clock; a
--          released id that never arrived is a tombstone, scored by minus the end of its lease
-- ARGV[1]  max: the most permits held at once (1 <= max)
-- ARGV[2]  ttl: the lease, in whole microseconds (1000 <= ttl)
-- ARGV[3]  the new permit's id, chosen by the caller before the call and unique to it
--
-- Returns 0 when the permit is refused (max are held, or the id was released before this
-- call arrived), 1 when it is granted and no permit is left free, 2 when it is granted and
-- some still are: one small integer (a client boxes none below 256 in Go), or an error when
-- KEYS[1] holds another type (the Go side reports it as ratelimit.ErrInvalidState).

local max = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])

-- The Redis clock, so that application servers' clocks never matter. Microseconds since
-- 2020 stay below 2^53 (exact in a Lua number) for 285 years.
local t = redis.call('TIME') -- {seconds, microseconds}
local now = (tonumber(t[1]) - 1577836800) * 1000000 + tonumber(t[2])

-- A lease is live while its end is later than now. Scores at 2^53 or more (+inf), which
-- this script never writes, are not counted: they would never expire. Tombstones are
-- negative and not counted either.
local live = redis.call('ZCOUNT', KEYS[1], '(' .. now, '(9007199254740992')

-- The id is known: a retry of this very call that was granted (the client resent it after
-- a lost reply) is the same grant, counted once; a tombstone means the caller gave up and
-- released it already, so it must never be granted.
local seen = redis.call('ZSCORE', KEYS[1], ARGV[3])
if seen then
  if tonumber(seen) > now then
    if live < max then return 2 end -- live counts this very grant
    return 1
  end
  return 0
end

-- Counted without writing: under maxmemory with noeviction, Redis refuses a command that
-- may grow memory only while the script has written nothing, so the write that admits
-- (ZADD) must be the first. Ended leases and tombstones are trimmed after it, at times.
if live >= max then
  return 0
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
-- Leases that ended at now or before (their holders crashed or lost the network), and
-- tombstones whose acquisition can no longer arrive: scores in [-now, now]. Neither is
-- counted, so one acquisition in 8 (by the clock's microseconds) trims them, enough to
-- bound the set, and the others save the command.
if tonumber(t[2]) % 8 == 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], -now, now)
end

-- The key lives as long as its longest lease, in whole milliseconds rounded up, in one
-- command mostly (Redis 7). A key holding a live lease has an expiry (every script that
-- writes a lease gives one): GT extends it if shorter. Otherwise NX gives one to a key
-- without (the one just created), and GT extends an expiry the key had. Before Redis 7
-- both fail, and PTTL decides.
local ms = math.floor((ttl + 999) / 1000)
local set
if live > 0 then
  set = redis.pcall('PEXPIRE', KEYS[1], ms, 'GT')
else
  set = redis.pcall('PEXPIRE', KEYS[1], ms, 'NX')
  if set == 0 then
    set = redis.call('PEXPIRE', KEYS[1], ms, 'GT')
  end
end
if type(set) ~= 'number' and redis.call('PTTL', KEYS[1]) < ms then
  redis.call('PEXPIRE', KEYS[1], ms)
end
if live + 1 < max then return 2 end
return 1
