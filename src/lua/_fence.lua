-- (Included by acquire.lua and fence.lua.) Reading the fence counters of the lock keys KEYS[1..n]
-- in the epoch hash `epoch`: the highest of them, and whether that reading is trusted. A counter
-- is trusted when present (it was written in this epoch), or when the member was declared brand
-- new (genesis): absent then means never used.
local function fenceReading(epoch, n)
  local genesis = redis.call('HGET', epoch, 'genesis') == '1'
  local highest, trusted = 0, 1
  for i = 1, n do
    local counter = tonumber(redis.call('HGET', epoch, 'fence:' .. KEYS[i]))
    if counter then
      highest = math.max(highest, counter)
    elseif not genesis then
      trusted = 0
    end
  end
  return highest, trusted
end
