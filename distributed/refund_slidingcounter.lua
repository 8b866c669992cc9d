-- Refund for the sliding window counter (slidingcounter.lua): the count of the window that
-- holds at, the instant the refunded request was charged, is decreased by cost, never below
-- zero, while that window still weighs in the estimate: when it is the current window at
-- now, or the previous one. If a later request has moved the value on to the next window,
-- that count is now the value's previous one, and is the one decreased. Counts of other
-- windows are left alone: an older one weighs nothing any more, and one the request was not
-- charged in owes it nothing. A value whose counts are both zero is deleted: a missing key
-- means the same.
--
-- Taking the request's cost from the count it was added to leaves the counts the others
-- made, as if it had never come; the estimate only grows with the counts, so the bucket
-- then admits no more than it would have without the request.
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
  local burst = tonumber(a[2])
  local i, c, p
  if type(stored) == 'string' then
    i, c, p = string.match(stored, '^(%d+):(%d+):(%d+)$')
  end
  c, p = tonumber(c), tonumber(p)
  if not c or c > burst or p > burst then
    return redis.error_reply('INVALIDSTATE the key holds no value this script writes')
  end
  i = tonumber(i)
  local w = tonumber(a[4])
  -- Windows count from 1970; fmod is exact on these integers (see slidingcounter.lua).
  local t = now + 1577836800000000
  local current = (t - math.fmod(t, w)) / w
  local charged = current
  if at then
    local u = at + 1577836800000000
    charged = (u - math.fmod(u, w)) / w
  end
  local cost = tonumber(a[3])
  if charged < current - 1 or charged > current then
    return nil
  elseif i == charged then
    c = math.max(c - cost, 0)
  elseif i == charged + 1 then
    p = math.max(p - cost, 0)
  else
    return nil
  end
  if c == 0 and p == 0 then
    redis.call('DEL', key)
    return nil
  end
  -- The value expires at the end of window i + 1, as slidingcounter.lua writes it.
  local ttl = math.max(math.ceil(((i + 2) * w - t) / 1000), 1) + pad
  redis.call('SET', key, string.format('%d:%d:%d', math.floor(i), math.floor(c), math.floor(p)), 'PX', ttl)
  return nil
end
