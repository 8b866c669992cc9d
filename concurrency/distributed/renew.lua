-- Extends the leases one limiter holds on one key, atomically, and restores those Redis
-- lost.
--
-- KEYS[1]  the key's sorted set (see acquire.lua)
-- ARGV[1]  ttl: the lease, in whole microseconds (1000 <= ttl)
-- ARGV[2…] the ids of the permits to renew, each one the limiter knows is live: its last
--          renewal (or its grant) started less than a TTL ago, by the limiter's clock
--
-- A lease that has ended is not revived, even when it is still in the set: once it has
-- ended, acquire.lua no longer counts it and may have given its place to another holder.
-- A lease that is absent, although its holder knows it cannot have ended, was lost with
-- Redis's data (a restart, a flush, a failover to a replica that never had it): it is added
-- again, so that the key counts its running holders and grants no more than max beside them.
-- Returns the 1-based positions (among the ids) of the leases not renewed: ended.

local ttl = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1577836800) * 1000000 + tonumber(t[2])

local lost = {}
local kept = false
for i = 2, #ARGV do
  local ends = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if ends and tonumber(ends) <= now then
    lost[#lost + 1] = i - 1
  else
    redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
    kept = true
  end
end

if kept then
  local ms = math.floor((ttl + 999) / 1000)
  if redis.call('PTTL', KEYS[1]) < ms then
    redis.call('PEXPIRE', KEYS[1], ms)
  end
end
return lost
