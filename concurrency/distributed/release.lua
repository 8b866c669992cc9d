-- Frees one permit of one key.
--
-- KEYS[1]  the key's sorted set (see acquire.lua)
-- ARGV[1]  the permit's id
--
-- Returns 1 when the permit was held, 0 when it was not (released already, or its lease
-- ended and was trimmed). ZREM alone would do: it is a script so that the limiter needs
-- nothing of its client but redis.Scripter, as package distributed's limiter does.
return redis.call('ZREM', KEYS[1], ARGV[1])
