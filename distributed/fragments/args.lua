-- args: the arguments every single-key script takes first (see algorithms.go), as numbers.
-- usable is the burst the request is decided under: burst less the reserve of its priority
-- (ARGV[5]; absent or 0 for none). Defines rate, burst, cost and usable.
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local usable = burst
if ARGV[5] then
  usable = burst - tonumber(ARGV[5]) -- a test, not a call, when absent
end
