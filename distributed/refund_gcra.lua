-- Refund for the token bucket (gcra.lua) and the leaky bucket (leakybucket.lua), which both
-- store a TAT counted in tokens: giving back cost tokens moves it back by cost, never before
-- now (a TAT at or before now is a full bucket, or an empty queue, and is deleted: a missing
-- key means the same). A missing key is a full bucket: nothing to give back.
--
-- The refund happens at now, whatever instant the request was charged at: a TAT keeps no
-- trace of when its tokens were taken (docs/limits.md says what that gives back).
--
-- key  the bucket's key
-- a    the single-key script's ARGV: a[1] rate, a[3] cost (tokens to give back)
-- at   unused: nil, or the instant the refunded request was charged, µs since 2020
-- now  the instant of the refund, µs since 2020
--
-- Returns nil, or an INVALIDSTATE error reply, having written nothing, for a value the
-- scripts cannot have written.
local function refund(key, a, at, now_us)
  local stored = redis.pcall('GET', key)
  if not stored then
    return nil
  end
  local tat = tonumber(stored)
  if not (tat and tat > -9007199254740992 and tat < 9007199254740992) then -- nil: an error
    return redis.error_reply('INVALIDSTATE the key holds no value this script writes')
  end
  local rate = tonumber(a[1])
  local now = now_us * rate / 1000000
  tat = tat - tonumber(a[3])
  if tat <= now then
    redis.call('DEL', key)
    return nil
  end
  -- Keep the key until the bucket is full again, as gcra.lua does.
  local reset = math.min(math.floor((tat - now) * 1000000 / rate + 0.5), 9007199254740992)
  local ttl = math.max(math.ceil(reset / 1000), 1) + pad
  redis.call('SET', key, string.format('%.17g', tat), 'PX', ttl)
  return nil
end
