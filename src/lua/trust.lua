-- An operator's declaration about this member's current epoch (never run automatically).
-- KEYS: the epoch hash. ARGV[1]: 'new' or 'floor'; ARGV[2]: for 'floor', the fence floor.
-- 'new': a brand-new member that never held a lock or a fence token. Its epoch is marked
--   genesis: no quarantine, whatever ttl the callers use, and an absent fence counter reads as
--   0. On a member that lost data while locks were held this would hide exactly the hazard the
--   quarantine guards against.
-- 'floor': after a majority of members lost their data at once, fencing tokens can no longer be
--   derived from the members alone. The operator names a floor at or above every token ever
--   issued (e.g. the highest token the protected resources have accepted); it becomes the
--   epoch's floor (every resource reads at least it, trusted). The quarantine is not touched.
-- Returns the quarantine ms that was left before ('new'), or the floor now ('floor').
-- KEYS: the epoch hash; ARGV start with the epoch id the operator's call is bound to (_bound.lua):
-- a trust re-sent to a restarted member finds another epoch there and trusts nothing.
-- #include _compat.lua
-- #include _epoch.lua
-- #include _quarantine.lua
local EVICTIONS = true
-- #include _bound.lua
-- #include _fence.lua
if ARGV[1] == 'floor' then
  local floor = math.max(tonumber(redis.call('HGET', EPOCH, 'floor') or '0'), tonumber(ARGV[2]))
  redis.call('HSET', EPOCH, 'floor', floor)
  raiseMax(EPOCH, floor)
  return floor
end
local left = quarantineLeft(EPOCH, since, tonumber(ARGV[2] or '0'))
redis.call('HSET', EPOCH, 'genesis', '1')
return left
