-- Refund for the calendar quota (quota.lua): the stored period's count is decreased by
-- cost, never below zero, if that period holds now and at, the instant the refunded
-- request was charged. A period that has ended took its charges with it, and one the
-- request was not charged in owes it nothing. A count of zero is deleted: a missing key
-- means the same. The periods the caller computed (a[4]) are not needed: the stored one
-- is the bucket's.
--
-- key  the bucket's key
-- a    the single-key script's ARGV: a[2] burst, a[3] cost
-- at   the instant the refunded request was charged, µs since 2020, or nil to refund the
--      current period (an operator's refund)
-- now  the instant of the refund, µs since 2020
--
-- Returns nil, or an INVALIDSTATE error reply, having written nothing, for a value the
-- script cannot have written.
local function refund(key, a, at, now)
  local stored = redis.pcall('GET', key)
  if not stored then
    return nil
  end
  local s, e, c
  if type(stored) == 'string' then
    s, e, c = string.match(stored, '^(%d+):(%d+):(%d+)$')
  end
  s, e, c = tonumber(s), tonumber(e), tonumber(c)
  if not c or c > tonumber(a[2]) then
    return redis.error_reply('INVALIDSTATE the key holds no value this script writes')
  end
  local t = now + 1577836800000000 -- periods count from 1970
  if t < s or t >= e then
    return nil
  end
  if at then
    local u = at + 1577836800000000
    if u < s or u >= e then
      return nil
    end
  end
  c = math.max(c - tonumber(a[3]), 0)
  if c == 0 then
    redis.call('DEL', key)
    return nil
  end
  local ttl = math.max(math.ceil((e - t) / 1000), 1) + pad
  redis.call('SET', key, string.format('%d:%d:%d', math.floor(s), math.floor(e), math.floor(c)), 'PX', ttl)
  return nil
end
