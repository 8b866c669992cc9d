-- clock: the Redis clock. Defines now_us, the instant of the decision in whole microseconds
-- since 2020-01-01T00:00:00Z (1577836800 s after the Unix epoch), and pad, the milliseconds
-- a key outlives its state: none, as Redis expires keys on the clock the script read.
local now_us
do
  local t = redis.call('TIME') -- {seconds, microseconds}
  now_us = (tonumber(t[1]) - 1577836800) * 1000000 + tonumber(t[2])
end
local pad = 0
