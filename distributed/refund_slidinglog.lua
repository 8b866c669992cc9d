-- Refund for the sliding window log (slidinglog.lua): the cost newest entries of the window
-- that ends at at (later than at - W, at the latest at) are dropped. Refunding at the
-- instant a request was charged drops entries of that instant, so exactly what it added.
-- Entries that have left the window are not touched: they count for nothing already. A set
-- left empty disappears; one left with entries keeps its expiry (set when its newest entry
-- was added, later than any it still holds).
--
-- key  the bucket's key
-- a    the single-key script's ARGV: a[3] cost, a[4] empty or the test clock, a[5] the
--      window W in µs
-- at   the instant to refund at, µs since 2020
--
-- Returns nil, or an INVALIDSTATE error reply, having written nothing, for a key of another
-- type.
local function refund(key, a, at)
  local window = tonumber(a[5])
  local newest = redis.pcall('ZREVRANGEBYSCORE', key, string.format('%.0f', at),
    string.format('(%.0f', at - window), 'LIMIT', 0, tonumber(a[3]))
  if type(newest) ~= 'table' or newest.err then
    return redis.error_reply('INVALIDSTATE the key holds no value this script writes')
  end
  if #newest > 0 then
    for first = 1, #newest, 1000 do -- batches far below Lua's limit on unpack
      redis.call('ZREM', key, unpack(newest, first, math.min(first + 999, #newest)))
    end
    local ttl = math.max(math.ceil(window / 1000), 1)
    if a[4] ~= '' then
      ttl = math.max(ttl, 3600000) -- test clock: Redis's own clock, which expires keys, runs on
    end
    redis.call('PEXPIRE', key, ttl, 'NX') -- only a set that had no expiry: never for ours
  end
  return nil
end
