-- Raise the fence counters of a lock we hold to ARGV[2].
-- KEYS: the n lock keys, then the member's epoch hash.
-- ARGV: value, token, mode: 'propose' (a candidate token: written only where the reading is
--       trusted) or 'sync' (an established token: written also where it is not, which is how a
--       member that lost its counters becomes trusted again).
-- Returns {1 raised | 0 not raised, highest counter before, counters trusted 1/0}. Not raised
-- when a lock key no longer holds our value (the write must happen while we hold the lock: that
-- is what orders it before any later holder's reading), when a counter is already at or above
-- the token (then propose higher), or when proposing to an untrusted member: a candidate that
-- loses must never make a forgetful member look as if it knew the latest token.
local n = #KEYS - 1
if n < 1 then
  return redis.error_reply('quorumlock: expected the lock keys and the epoch key, got ' .. #KEYS)
end
-- #include _epoch.lua
-- #include _fence.lua
local epoch = KEYS[#KEYS]
local proposed = tonumber(ARGV[2])
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return {0, 0, 0}
  end
end
-- Counters are read only in this process's epoch: a restart or failover since the acquire round
-- starts a new one, and the counters it held are then unknown (untrusted) until synced again.
currentEpoch(epoch)
local highest, trusted = fenceReading(epoch, n)
if highest >= proposed or (trusted == 0 and ARGV[3] ~= 'sync') then
  return {0, highest, trusted}
end
for i = 1, n do
  redis.call('HSET', epoch, 'fence:' .. KEYS[i], proposed)
end
return {1, highest, trusted}
