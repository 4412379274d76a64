-- Fence counters in the epoch hash `epoch`: one per
-- resource ('fence:<key>', the highest token raised for it here in this epoch), a member-wide
-- 'floor' (covers every resource that has no counter of its own), and 'max' (the highest of
-- them all, read to compute a floor). Per-resource counters let holders of different resources
-- raise tokens at once without racing; the floor lets a member that lost its data be trusted
-- again for every resource, new ones included, after one repair (src/quorum/fence.ts).
-- A reading is trusted when each resource has a counter written in this epoch, or the epoch is
-- complete: declared brand new (genesis: absent means never used) or given a floor.
-- Provides: fenceReading, raiseMax
-- Needs: _compat.lua (unpack)
local function fenceReading(epoch, n)
  local genesis, floor = unpack(redis.call('HMGET', epoch, 'genesis', 'floor'))
  local base
  if genesis == '1' then
    base = 0
  end
  if floor then
    base = math.max(base or 0, tonumber(floor))
  end
  local highest, trusted = 0, 1
  for i = 1, n do
    local counter = tonumber(redis.call('HGET', epoch, 'fence:' .. KEYS[i]))
    if counter then
      highest = math.max(highest, counter, base or 0)
    elseif base then
      highest = math.max(highest, base)
    else
      trusted = 0
    end
  end
  local complete = 0
  if base then
    complete = 1
  end
  return highest, trusted, complete
end

-- 'max' follows every write of a counter or a floor.
local function raiseMax(epoch, value)
  if value > tonumber(redis.call('HGET', epoch, 'max') or '0') then
    redis.call('HSET', epoch, 'max', value)
  end
end
