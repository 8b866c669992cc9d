-- Refund for the token bucket with a warm-up (warmup.lua): giving back cost tokens moves the
-- TAT back by cost on the warm clock, never below W + (burst - tau), where the bucket holds
-- all it can (a refund never fills it beyond that). The warm-up is left as it is: s does not
-- move. A missing key, or a bucket cold at now, is as good as new: nothing to give back.
-- The refund happens at now, whatever instant the request was charged at, as refund_gcra.lua
-- does.
--
-- key  the bucket's key
-- a    the single-key script's ARGV: a[1] rate, a[2] burst, a[3] cost (tokens to give back),
--      a[4] the warm-up period p in µs
-- at   unused: nil, or the instant the refunded request was charged, µs since 2020
-- now  the instant of the refund, µs since 2020
--
-- Returns nil, or an INVALIDSTATE error reply, having written nothing, for a value the
-- script cannot have written.
local function refund(key, a, at, now)
  local stored = redis.pcall('GET', key)
  if not stored then
    return nil
  end
  local cap = 9007199254740992
  local sv, tv
  if type(stored) == 'string' then
    sv, tv = string.match(stored, '^(%-?%d+):([^:]+)$')
  end
  local s, tat = tonumber(sv), tonumber(tv)
  if not (s and tat and s > -cap and s < cap and tat > -cap and tat < cap) then -- nil: an error
    return redis.error_reply('INVALIDSTATE the key holds no value this script writes')
  end
  local rate, burst, p = tonumber(a[1]), tonumber(a[2]), tonumber(a[4])
  -- W and tau, and the inverse of W, exactly as warmup.lua computes them.
  local function clock(d)
    local m = math.min(d, p)
    return (m * (m + p) / (3 * p) + (d - m)) * rate / 1000000
  end
  local function inverse(tokens)
    local v = math.max(tokens, 0) * 1000000 / rate
    if v <= 2 * p / 3 then
      return 6 * p * v / (math.sqrt(p * p + 12 * p * v) + p)
    end
    return v + p / 3
  end
  local d = math.max(now - s, 0)
  local w = clock(d)
  if math.max(tat, clock(p)) + burst <= w then
    return nil -- cold: full, and as good as new
  end
  local tol = burst
  if d < p then
    tol = math.max(1, math.min(burst, burst * (p + 2 * d) / (3 * p)))
  end
  tat = math.max(tat - tonumber(a[3]), w + (burst - tol))
  -- Keep the key until the bucket is cold, as warmup.lua does.
  local ttl = math.max(math.ceil((inverse(math.max(tat, clock(p)) + burst) - d) / 1000) + 1, 1) + pad
  redis.call('SET', key, string.format('%.17g:%.17g', s, tat), 'PX', ttl)
  return nil
end
