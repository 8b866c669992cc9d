-- Refund for the sliding window log (slidinglog.lua). With at, the instant the refunded
-- request was charged, up to cost entries scored at exactly at are dropped: the ones the
-- request added, or others of the same microsecond, which are interchangeable with them.
-- Entries that have left the window at now count for nothing already and are not touched.
-- Without at (an operator's refund) the cost newest entries still in the window are
-- dropped. A set left empty disappears; one left with entries keeps its expiry (set when
-- its newest entry was added, later than any it still holds).
--
-- Dropping only entries the refunded request could have added leaves the times the others
-- were admitted at: every window then holds no more than burst entries of requests that
-- were not refunded, as if the refunded one had never come.
--
-- key  the bucket's key
-- a    the single-key script's ARGV: a[3] cost, a[4] the window W in µs
-- at   the instant the refunded request was charged, µs since 2020, or nil
-- now  the instant of the refund, µs since 2020
--
-- Returns nil, or an INVALIDSTATE error reply, having written nothing, for a key of another
-- type.
local function refund(key, a, at, now)
  local window = tonumber(a[4])
  local oldest = string.format('(%.0f', now - window) -- an entry exactly W old has left
  local entries
  if at then
    entries = {}
    if at > now - window then
      local s = string.format('%.0f', at)
      entries = redis.pcall('ZRANGEBYSCORE', key, s, s, 'LIMIT', 0, tonumber(a[3]))
    end
  else
    entries = redis.pcall('ZREVRANGEBYSCORE', key, string.format('%.0f', now), oldest,
      'LIMIT', 0, tonumber(a[3]))
  end
  if type(entries) ~= 'table' or entries.err then
    return redis.error_reply('INVALIDSTATE the key holds no value this script writes')
  end
  if #entries > 0 then
    for first = 1, #entries, 1000 do -- batches far below Lua's limit on unpack
      redis.call('ZREM', key, unpack(entries, first, math.min(first + 999, #entries)))
    end
    local ttl = math.max(math.ceil(window / 1000), 1) + pad
    redis.call('PEXPIRE', key, ttl, 'NX') -- only a set that had no expiry: never for ours
  end
  return nil
end
