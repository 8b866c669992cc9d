-- Counts the limiters of a fleet: each one says it is alive every third of its TTL.
--
-- KEYS[1]  the fleet's sorted set, named by the prefix alone (no permit's key is: a key is
--          never empty): one member per limiter, scored by the end of its lease (see
--          acquire.lua for the clock)
-- ARGV[1]  ttl: in whole microseconds (1000 <= ttl)
-- ARGV[2]  the limiter's id
--
-- Returns the number of live limiters, this one included.

local ttl = tonumber(ARGV[1])
local t = redis.call('TIME')
local now = (tonumber(t[1]) - 1577836800) * 1000000 + tonumber(t[2])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('PEXPIRE', KEYS[1], math.floor((ttl + 999) / 1000))
return redis.call('ZCARD', KEYS[1])
