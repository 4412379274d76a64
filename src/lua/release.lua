-- Release, and let whoever is first in line go next.
-- KEYS: resourceKeys (5 per resource: lock, line, leases, readers, handover), then the epoch hash.
-- ARGV[1]: value. ARGV[2]: the holder's waiter id when it took a place in line ('' = none): it
-- leaves every line here, with its handover request, before the new head is told. A waiter that
-- wins keeps its place until then (the acquire scripts bound it to its hold: _acquired.lua,
-- granted; _wake.lua, handOver), which saves a separate leave round per won wait. ARGV[3]: the
-- holder's handover values it did not win with ('' = none, space-separated): a release may have
-- handed it one of them late, which it never counted (takeBack).
-- An exclusive value: deletes each lock key that still holds it; leaves keys of other owners
-- alone. A shared value (SHARED_MARK first): removes its entry from each readers ZSET, and
-- touches nothing else. Where a line of waiters exists and the resource is now free for its head,
-- tells the waiter now first in line only (or hands it the lock), or the readers at the head,
-- each on its listener's channel (_wake.lua, wakeHead): one message per waiter, however long the line.
-- Returns how many lock keys (or reader entries) holding `value` were deleted.
-- #include _compat.lua
-- #include _keys.lua
-- #include _epoch.lua
local EVICTIONS = false
-- #include _bound.lua
local n = resourceCount(0)
if not n then
  return malformed(' and the epoch key')
end
local value, leaving, abandoned = ARGV[1], ARGV[2] or '', ARGV[3] or ''
-- The uncontended release: one resource, an exclusive hold, no place in line and nothing handed
-- over late, and no line of waiters here (so nobody to wake). It makes the calls the full path
-- below would make and returns what it would, before the definitions only a line needs are made
-- (about 1.5 us a call).
if n == 1 and leaving == '' and abandoned == '' and not isShared(value) and redis.call('EXISTS', KEYS[2]) == 0 then
  if redis.pcall('GET', KEYS[1]) ~= value then
    return 0
  end
  redis.call('DEL', KEYS[1])
  return 1
end
-- #include _readers.lua
-- #include _wake.lua

-- Deletes the hold of `value` on resource i: its lock key, or for a shared value its reader entry
-- (live or not). Whether there was one.
local function dropHold(i)
  if isShared(value) then
    return redis.call('ZREM', KEYS[3 * n + i], value) == 1
  end
  if holds(i, n, value) then
    redis.call('DEL', KEYS[i])
    return true
  end
  return false
end

local deleted = 0
for i = 1, n do
  local freed = dropHold(i)
  if freed then
    deleted = deleted + 1
  end
  freed = takeBack(i, abandoned) or freed
  -- Out of line first, so that the head told next is not the holder itself.
  local left = false
  if leaving ~= '' then
    left = redis.call('ZREM', KEYS[n + i], leaving) == 1
    redis.call('ZREM', KEYS[2 * n + i], leaving)
    dropRequests(KEYS[4 * n + i], leaving)
  end
  if freed or left then
    wakeHead(i, n)
  end
end
return deleted
