-- Extends the leases one limiter holds on one key, atomically.
--
-- KEYS[1]  the key's sorted set (see acquire.lua)
-- ARGV[1]  ttl: the lease, in whole microseconds (1000 <= ttl)
-- ARGV[2…] the ids of the permits to renew
--
-- A lease that has ended is not revived, even when it is still in the set: once it has
-- ended, acquire.lua no longer counts it and may have given its place to another holder.
-- Returns the ids that were not renewed (ended, or gone), for the limiter to stop renewing.

local ttl = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1577836800) * 1000000 + tonumber(t[2])

local lost = {}
local renewed = false
for i = 2, #ARGV do
  local ends = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[i]))
  if ends and ends > now then
    -- XX: update only; the member exists, this never adds one.
    redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[i])
    renewed = true
  else
    lost[#lost + 1] = ARGV[i]
  end
end

if renewed then
  local ms = math.floor((ttl + 999) / 1000)
  if redis.call('PTTL', KEYS[1]) < ms then
    redis.call('PEXPIRE', KEYS[1], ms)
  end
end
return lost
