-- clock_shared: a bucket of multi.lua takes the instant and the pad the script read once
-- (multi.lua's own clock), so that every bucket is decided at the same instant.
local now_us, pad = now_us, pad
