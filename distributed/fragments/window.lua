-- window: the window aligned to the Unix epoch that holds now (fixedwindow.lua,
-- slidingcounter.lua): window i covers [i*W, (i+1)*W) in Unix microseconds, so every
-- instance agrees on where each starts. Defines window (W, ARGV[4]: 1 <= W <= 2^53), now in
-- Unix microseconds, elapsed (now mod W), index (i) and left (microseconds until i ends).
-- now < 2^53 and fmod is exact on doubles, so elapsed and index are exact integers (Lua
-- 5.1's % computes a - floor(a/b)*b, which can be off by one here); index is floored so
-- that Lua 5.4 holds it as an integer, which string.format('%d') requires.
local window = tonumber(ARGV[4])
local now = now_us + 1577836800000000
local elapsed = math.fmod(now, window)
local index = math.floor((now - elapsed) / window)
local left = window - elapsed
