-- Frees permits of one key and wakes the limiters waiting for it.
--
-- KEYS[1]  the key's sorted set (see acquire.lua)
-- ARGV[1]  ttl: the lease, in whole microseconds (1000 <= ttl)
-- ARGV[2]  "s" to publish the wake-up on a shard channel (SPUBLISH: a Cluster), "" on a plain
--          one (PUBLISH)
-- ARGV[3]  the releasing limiter's id: the wake-up's payload, so that it ignores its own
-- ARGV[4…] the permits' ids
--
-- An id that is not in the set either ended, or its acquisition has not arrived yet (its
-- caller gave up waiting for the reply): it becomes a tombstone, scored by minus the end of
-- a lease starting now, so that acquire.lua refuses it if it comes. A tombstone is never
-- counted as a holder, and may be trimmed once that lease would have ended.
-- Publishes one message on the channel named KEYS[1] when a permit was freed: on a
-- Cluster a shard channel, of KEYS[1]'s slot, so that only the node holding the key sends
-- it (a plain channel's message goes to every node); on a server without shard channels
-- (before Redis 7), a plain one. Returns how many permits were freed (a lease that had
-- ended included: its wake-up finds nothing more, and costs one round trip).

local ttl = tonumber(ARGV[1])

local freed = 0
local marked = false
for i = 4, #ARGV do
  local ends = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if not ends then
    -- The clock, read only here: a release of a permit held needs none.
    local t = redis.call('TIME')
    local now = (tonumber(t[1]) - 1577836800) * 1000000 + tonumber(t[2])
    redis.call('ZADD', KEYS[1], -(now + ttl), ARGV[i])
    marked = true
  elseif tonumber(ends) > 0 then
    redis.call('ZREM', KEYS[1], ARGV[i])
    freed = freed + 1
  end
end
if marked then
  local ms = math.floor((ttl + 999) / 1000)
  if redis.call('PTTL', KEYS[1]) < ms then
    redis.call('PEXPIRE', KEYS[1], ms)
  end
end
if freed > 0 then
  local sent = ARGV[2] == 's' and redis.pcall('SPUBLISH', KEYS[1], ARGV[3])
  if type(sent) ~= 'number' then
    redis.call('PUBLISH', KEYS[1], ARGV[3])
  end
end
return freed
