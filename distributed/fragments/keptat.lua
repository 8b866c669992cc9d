-- keptat: v, the TAT of a bucket with KeepUsage, stored as "TAT rate" (keep.go), carried from
-- the rate it was written at to the call's: the deficit read at its own rate, none being a full
-- bucket (v = now). It uses stored, rate, now_us and now, and assigns v, declared by the script;
-- v stays nil for a value that is none of this.
do
  local t, r0
  if type(stored) == 'string' then
    t, r0 = string.match(stored, '^(%S+) (%S+)$')
  end
  t, r0 = tonumber(t), tonumber(r0)
  if t and r0 and r0 > 0 and r0 <= 1000000 then
    v = t
    if r0 ~= rate then
      local a0 = t - now_us * r0 / 1000000
      v = now
      if a0 > 0 then
        v = now + a0
      end
    end
  end
end
