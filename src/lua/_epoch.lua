-- (Included by acquire.lua, fence.lua and trust.lua.) The member's epoch: since when this Redis
-- process has held the data it holds, kept in a hash with the process's run id.
local nowMs
local function now()
  if not nowMs then
    local time = redis.call('TIME')
    nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  return nowMs
end

-- The `since` of this process's epoch in the hash `epoch`; a new epoch (since = now, no fence
-- counters, not genesis) when the hash is absent or was written by another process.
-- Absent: a restart without persistence, FLUSHALL, eviction, or the first use ever.
-- Another run id: a restart from disk (the last writes before the crash may be lost: the fsync
-- window) or a replica promoted by a failover (replication is asynchronous: the old master's last
-- writes may never have arrived). Either way locks this member once held may be missing, and
-- fence counters copied from the old process may be behind: nothing of the old epoch is trusted.
local function currentEpoch(epoch)
  -- The run id is 40 hex characters; a plain find is 3x cheaper than a pattern over INFO's text.
  local info = redis.call('INFO', 'server')
  local at = string.find(info, 'run_id:', 1, true)
  local runId = string.sub(info, at + 7, at + 46)
  local since, owner = unpack(redis.call('HMGET', epoch, 'since', 'run_id'))
  if since and owner == runId then
    return since
  end
  redis.call('DEL', epoch)
  since = tostring(now())
  redis.call('HSET', epoch, 'since', since, 'run_id', runId)
  return since
end
