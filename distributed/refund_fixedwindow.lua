-- Refund for the fixed window (fixedwindow.lua): the count of the window that holds at, the
-- instant the refunded request was charged, is decreased by cost, never below zero, if that
-- window is still the current one at now. A count of another window is left alone: a
-- window that has ended took its charges with it, and one the request was not charged in
-- owes it nothing. A count of zero is deleted: a missing key means the same.
--
-- key  the bucket's key
-- a    the single-key script's ARGV: a[2] burst, a[3] cost, a[4] the window W in µs
-- at   the instant the refunded request was charged, µs since 2020, or nil to refund the
--      current window (an operator's refund)
-- now  the instant of the refund, µs since 2020
--
-- Returns nil, or an INVALIDSTATE error reply, having written nothing, for a value the
-- script cannot have written.
local function refund(key, a, at, now)
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
  local window = tonumber(a[4])
  -- Windows count from 1970; fmod is exact on these integers (see fixedwindow.lua).
  local t = now + 1577836800000000
  local elapsed = math.fmod(t, window)
  local index = (t - elapsed) / window
  local charged = index
  if at then
    local u = at + 1577836800000000
    charged = (u - math.fmod(u, window)) / window
  end
  if tonumber(i) ~= index or charged ~= index then
    return nil
  end
  c = math.max(c - tonumber(a[3]), 0)
  if c == 0 then
    redis.call('DEL', key)
    return nil
  end
  local ttl = math.max(math.ceil((window - elapsed) / 1000), 1) + pad
  redis.call('SET', key, string.format('%d:%d', math.floor(index), math.floor(c)), 'PX', ttl)
  return nil
end
