-- Sliding window log for one bucket, atomically: at most burst tokens in any interval of
-- length W, exactly. The bucket is a sorted set with one member per token admitted in the
-- last window, scored with the time it was admitted.
--
-- KEYS[1]  the bucket's key
-- ARGV[1]  rate: tokens per second (unused: the window carries it)
-- ARGV[2]  burst: tokens allowed in any window (1 <= burst <= ratelimit.MaxLogBurst)
-- ARGV[3]  cost: tokens this request takes (1 <= cost <= burst)
-- ARGV[4]  the window W = burst / rate in whole microseconds (>= 1), computed by the caller
--          so that every backend works with the same integer
-- ARGV[5]  absent, or the reserve: the tokens this request's priority must leave in the
--          window for higher ones (0 <= reserve <= burst - cost; ratelimit.Reserves.Tokens).
--          The request is decided as under a burst of usable = burst - reserve; the log, its
--          trimming and its expiry are the bucket's own.
--
-- Times are whole microseconds since 2020-01-01, far below 2^53 for centuries, so scores
-- (doubles) hold them exactly and every sum below is exact.
--
-- Returns {allowed (1 or 0), remaining tokens, retry-after us, reset-after us, delay us (0),
-- now in us since 2020 (the decision's instant, which a refund of it names)}, integers.

-- @include args
-- @include clock
local window = tonumber(ARGV[4])
local now = now_us

-- The window at now holds the entries later than now - W, from first on (times are whole
-- microseconds): one exactly W old has left. Count them without writing: under maxmemory
-- with noeviction, Redis refuses a command that may grow memory only while the script has
-- written nothing, so the write that admits (ZADD) must be the first. The entries that have
-- left are trimmed after it.
-- Entries at 2^53 or later (+inf), which this script never writes and which would never
-- leave, are not counted: (9007199254740992 is the bound. A key of another type is an empty
-- log: the request is admitted and replaces the value.
local first = now - window + 1
local count = redis.pcall('ZCOUNT', KEYS[1], first, '(9007199254740992')
local foreign = type(count) ~= 'number'
if foreign then
  count = 0
end

if count + cost <= usable then
  if foreign then
    -- SET, which a full Redis refuses, is the first write, as every admission's is; it
    -- replaces the value whatever its type, and DEL makes way for the log.
    redis.call('SET', KEYS[1], '')
    redis.call('DEL', KEYS[1])
  end
  -- Add cost entries at now. Members must be unique, or ZADD would move an entry instead of
  -- adding one: each is named "<now>:<position in the window>". Requests in the same
  -- microsecond find the count grown by the ones before, so their names differ, and an
  -- entry that has left but is not trimmed yet bears an earlier time. Only if Redis TIME
  -- stepped back could a name be taken (the window then also holds entries from the
  -- "future"); NX leaves that member alone, and the loop names the missing entries further
  -- on. A batch stays far below Lua's limit on unpack.
  local added, position = 0, count
  while added < cost do
    local entries = {}
    for i = 1, math.min(cost - added, 1000) do
      position = position + 1
      entries[2 * i - 1] = now
      entries[2 * i] = string.format('%.0f:%d', now, math.floor(position))
    end
    added = added + redis.call('ZADD', KEYS[1], 'NX', unpack(entries))
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
  -- The newest entry, at now, leaves the window W from now: so does the key.
  local ttl = math.max(math.ceil(window / 1000), 1) + pad
  redis.call('PEXPIRE', KEYS[1], ttl)
  return {1, usable - count - cost, 0, window, 0, now}
end

-- Denied, nothing written. k = count + cost - usable entries must leave the window first
-- (1 <= k <= count, as cost <= usable); the k-th oldest in it leaves W after it was
-- admitted. The window is empty once the newest has left.
-- The window holds more than usable when the request keeps a reserve, or more than burst if
-- Redis TIME stepped back: then nothing remains.
local k = count + cost - usable
local kth = redis.call('ZRANGEBYSCORE', KEYS[1], first, '(9007199254740992', 'WITHSCORES', 'LIMIT', k - 1, 1)
local newest = tonumber(redis.call('ZREVRANGEBYSCORE', KEYS[1], '(9007199254740992', '-inf', 'WITHSCORES',
  'LIMIT', 0, 1)[2])
return {0, math.max(usable - count, 0), tonumber(kth[2]) + window - now, newest + window - now, 0, now}
