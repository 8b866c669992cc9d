-- tat: the theoretical arrival time of GCRA (gcra.lua, leakybucket.lua), counted in tokens:
-- a clock reading of t microseconds is worth t * rate / 1e6 tokens. Defines now, the
-- decision's instant in tokens, and tat, the bucket's TAT, never before now.
-- A missing key is a full bucket: its TAT is now or earlier. So is a value no script of
-- this package writes (not a number below 2^53: text, nan, inf, another type, whose pcall
-- error tonumber reads as nil): a new bucket admits its first request, whose SET replaces
-- the value whatever its type, so something else's value limits the key at once and is
-- gone after one call. (A full Redis refuses that SET, as it refuses every admission.)
local now = now_us * rate / 1000000
local tat = tonumber(redis.pcall('GET', KEYS[1]))
if not (tat and tat > now and tat < 9007199254740992) then -- nan too
  tat = now
end
