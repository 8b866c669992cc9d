-- Grants a permit of one key if fewer than max live leases are held, atomically.
--
-- KEYS[1]  the key's sorted set: one member per permit, named by its id, scored by the end of
--          its lease in whole microseconds since 2020-01-01T00:00:00Z on the Redis clock
-- ARGV[1]  max: the most permits held at once (1 <= max)
-- ARGV[2]  ttl: the lease, in whole microseconds (1000 <= ttl)
-- ARGV[3]  the new permit's id, unique to it
--
-- Returns {granted (1 or 0), live leases after the decision, now in us since 2020}, integers
-- all, or an error when KEYS[1] holds another type (the Go side reports it as
-- ratelimit.ErrInvalidState).

local max = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])

-- The Redis clock, so that application servers' clocks never matter. Microseconds since
-- 2020 stay below 2^53 (exact in a Lua number) for 285 years.
local t = redis.call('TIME') -- {seconds, microseconds}
local now = (tonumber(t[1]) - 1577836800) * 1000000 + tonumber(t[2])

-- A lease is live while its end is later than now. Count them without writing: under
-- maxmemory with noeviction, Redis refuses a command that may grow memory only while the
-- script has written nothing, so the write that admits (ZADD) must be the first. Expired
-- leases are trimmed after it. Scores at 2^53 or more (+inf), which this script never
-- writes, are not counted: they would never expire.
local live = redis.call('ZCOUNT', KEYS[1], '(' .. now, '(9007199254740992')
if live >= max then
  return {0, live, now}
end

redis.call('ZADD', KEYS[1], now + ttl, ARGV[3])
-- Leases that ended at now or before: their holders crashed or lost the network.
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)

-- The key lives as long as its longest lease, in whole milliseconds rounded up. PTTL is -1
-- for a key without expiry (the one just created), so it always gets one.
local ms = math.floor((ttl + 999) / 1000)
if redis.call('PTTL', KEYS[1]) < ms then
  redis.call('PEXPIRE', KEYS[1], ms)
end
return {1, live + 1, now}
