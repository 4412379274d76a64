-- Reads the member's epoch (beginning one where there is none, or where the data's lineage
-- changed: _epoch.lua), for a client that has not read it on this member yet: every write is
-- bound to the id read here (_bound.lua). KEYS[1]: the epoch hash. Replies the epoch id, or fails
-- with QUORUMLOCK_ROLE on a server that is not a plain master. Reply: {id, age ms (how long ago
-- the epoch began, on the member's clock), fresh: 1 when it began on a member that had no epoch
-- hash (new, or restarted or flushed empty), 0 when it replaced one (a failover, a resync, an
-- eviction: _epoch.lua marks it `replaced`), the run id and replication id of its data}.
-- #include _compat.lua
-- #include _epoch.lua
local id, since = currentEpoch(KEYS[1], true)
if not id then
  return redis.error_reply('QUORUMLOCK_ROLE this server is not a plain master')
end
local replaced, runId, replid = unpack(redis.call('HMGET', KEYS[1], 'replaced', 'run_id', 'replid'))
local fresh = 1
if replaced == '1' then
  fresh = 0
end
return {id, now() - tonumber(since), fresh, runId, replid}
