-- Acquire a shared (reader) lock: acquire.lua's KEYS, ARGV and replies (src/store/protocol.ts),
-- for a value and a waiter id that start with SHARED_MARK. Any number of shared holders, or one
-- exclusive holder (docs/shared-locks.md has the whole argument):
-- * a reader enters when no lock key is set (no writer holds) and no writer waits ahead of it in
--   line (arrival tickets, the same on every member): readers never overtake an earlier writer,
--   so a stream of readers cannot starve one; readers at the head all enter together;
-- * acquire.lua refuses a writer while a live reader entry exists, and this script refuses a
--   reader while a lock key exists. Each runs atomically on the member, so on any one member a
--   writer and a reader never hold at once, and any two quorums share a member.
-- A reader holds by its entry in the readers ZSET (value → now + ttl on this member's clock) and
-- joins, keeps and leaves its place in line exactly as a writer does.
-- Why that is safe across the quorum: a writer holds by a majority without live readers when its
-- script ran, a reader by a majority without a writer's key; two majorities share a member m; the
-- key and the entry each live ttl from their script's run on m's clock, and whichever was set
-- first on m refuses the other there for as long as it lives. Validity is the exclusive lock's:
-- ttl - elapsed - drift from before the round was sent (src/quorum/acquire.ts), since the entry,
-- like a PX key, lives ttl from a moment after that start.
-- #include _compat.lua
-- #include _keys.lua
-- #include _epoch.lua
local EVICTIONS = true
-- #include _bound.lua
local n = resourceCount(0)
if not n then
  return malformed(' and the epoch key')
end
local epoch = EPOCH
local value, ttl, waiter, ticket, lease = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4], tonumber(ARGV[5])
local quarantine, fencing, settled = tonumber(ARGV[6]), ARGV[7] == '1', ARGV[8]
if not isShared(value) or not isShared(waiter) then
  return redis.error_reply('quorumlock: a shared acquire needs a shared value and waiter id')
end
-- #include _fence.lua
-- #include _readers.lua
-- #include _acquired.lua

local heldFor, ahead, forever, lined = -1, false, false, nil
for i = 1, n do
  local pttl = redis.call('PTTL', KEYS[i])
  if pttl == -1 then
    forever = true
  elseif pttl ~= -2 then
    heldFor = math.max(heldFor, pttl, 0)
  end
  local line = KEYS[n + i]
  if redis.call('EXISTS', line) == 1 then
    lined = lined or {}
    lined[i] = true
    pruneLine(i, n)
    -- A writer ahead of us: one in line before our own place, or anywhere in line when we have
    -- no place (we arrived after everyone in it, as far as this member knows).
    for _, other in ipairs(redis.call('ZRANGE', line, 0, -1)) do
      if other == waiter then
        break
      end
      if not isShared(other) then
        ahead = true
        break
      end
    end
  end
end

if heldFor == -1 and not forever and not ahead then
  local expires = now() + ttl
  for i = 1, n do
    local readers = KEYS[3 * n + i]
    redis.call('ZREMRANGEBYSCORE', readers, '-inf', now())
    redis.call('ZADD', readers, expires, value)
    -- The key lives as long as its latest reader.
    if redis.call('PTTL', readers) < ttl then
      redis.call('PEXPIRE', readers, ttl)
    end
  end
  return granted(epoch, epochId, since, settled, quarantine, fencing, n, waiter, ttl, lined)
end

-- Held by this very attempt (a second run of the call): granted again, as the first run was.
if holdsAll(n, value) then
  return granted(epoch, epochId, since, settled, quarantine, fencing, n, waiter, ttl, lined)
end
return refused(n, value, waiter, ticket, lease, heldFor, forever, epoch, epochId, since, quarantine, fencing)
