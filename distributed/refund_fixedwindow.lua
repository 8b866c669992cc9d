-- Refund for the fixed window (fixedwindow.lua): the count of the window that holds at is
-- decreased by cost, never below zero. A count of another window (one that has ended) is
-- left alone: what it charged is gone with it. A count of zero is deleted: a missing key
-- means the same.
--
-- key  the bucket's key
-- a    the single-key script's ARGV: a[2] burst, a[3] cost, a[4] empty or the test clock,
--      a[5] the window W in µs
-- at   the instant to refund at, µs since 2020
--
-- Returns nil, or an INVALIDSTATE error reply, having written nothing, for a value the
-- script cannot have written.
local function refund(key, a, at)
  local stored = redis.pcall('GET', key)
  if not stored then
    return nil
  end
  local i, c
  if type(stored) == 'string' then
    i, c = string.match(stored, '^(%d+):(%d+)$')
  end
  c = tonumber(c)
  if not c or c > tonumber(a[2]) then
    return redis.error_reply('INVALIDSTATE the key holds no value this script writes')
  end
  local window = tonumber(a[5])
  local now = at + 1577836800000000 -- windows count from 1970
  local elapsed = math.fmod(now, window)
  local index = (now - elapsed) / window
  if tonumber(i) ~= index then
    return nil
  end
  c = math.max(c - tonumber(a[3]), 0)
  if c == 0 then
    redis.call('DEL', key)
    return nil
  end
  local ttl = math.max(math.ceil((window - elapsed) / 1000), 1)
  if a[4] ~= '' then
    ttl = math.max(ttl, 3600000) -- test clock: Redis's own clock, which expires keys, runs on
  end
  redis.call('SET', key, string.format('%d:%d', index, c), 'PX', ttl)
  return nil
end
