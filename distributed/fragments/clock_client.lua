-- clock_client: the caller's clock (WithClientClock), for a host that refuses TIME in a
-- script. The last two arguments are now_us, as the clock fragment defines it, and pad, the
-- caller's bound on the skew between its hosts' clocks in whole milliseconds: a key
-- outlives its state by that much, so that a host whose clock is behind still finds it.
local now_us = tonumber(ARGV[#ARGV - 1])
local pad = tonumber(ARGV[#ARGV])
