-- (Included by acquire.lua and fence.lua.) The member's fence counter in the epoch hash `epoch`:
-- the highest token raised here in this epoch, one counter for every resource of the member (of
-- the slot, on a Cluster), and whether that reading is trusted. Trusted when the counter was
-- written in this epoch (by a raise or a sync), or when the member was declared brand new
-- (genesis): absent then means never used. One counter for all resources is what lets a member
-- that lost its data become trusted again with one sync, for new resources too.
local function fenceReading(epoch)
  local counter, genesis = unpack(redis.call('HMGET', epoch, 'fence', 'genesis'))
  if counter then
    return tonumber(counter), 1
  end
  if genesis == '1' then
    return 0, 1
  end
  return 0, 0
end
