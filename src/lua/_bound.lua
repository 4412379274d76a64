-- Every script that writes starts here: its KEYS end with the member's epoch
-- hash and its ARGV start with the id of the epoch the client last read on this member
-- (src/members/redis-member.ts, #write: the one place that fills it in). Both are taken off, so each script's
-- own KEYS and ARGV start at 1. The call writes only in that epoch: anywhere else (a call that
-- ioredis re-sent to a restarted process, a late copy over a delayed link reaching a member that
-- failed over or was flushed since) it writes nothing and fails with `QUORUMLOCK_EPOCH <id>`,
-- the epoch it found, which the client adopts for its next call. On a server that is not a plain
-- master it fails with `QUORUMLOCK_ROLE`. Each script says, in EVICTIONS, whether a yes of its
-- grants on a key's absence (then an eviction since the epoch began ends the epoch: _epoch.lua).
-- Expects: the script defines EVICTIONS before it.
-- Provides: EPOCH, BOUND_TO, epochId, since
-- Needs: _epoch.lua (currentEpoch)
local EPOCH = table.remove(KEYS)
local BOUND_TO = table.remove(ARGV, 1)
local epochId, since = currentEpoch(EPOCH, EVICTIONS)
if not epochId then
  return redis.error_reply('QUORUMLOCK_ROLE this server is not a plain master')
end
if epochId ~= BOUND_TO then
  return redis.error_reply('QUORUMLOCK_EPOCH ' .. epochId)
end
