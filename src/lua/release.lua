-- Release, and hand the resource to whoever is first in line.
-- KEYS: the n lock keys, their n line keys, n lease keys and n reader keys. ARGV[1]: value.
-- ARGV[2] (optional): the holder's waiter id, when it won after waiting in line: it leaves every
-- line here (as leave.lua would), before the new head is woken. A waiter that wins keeps its place
-- until then (the acquire scripts bound it to its hold: _acquired.lua, granted), which saves the
-- separate leave round a won wait used to cost.
-- An exclusive value: deletes each lock key that still holds it; leaves keys of other owners
-- alone. A shared value (SHARED_MARK first): removes its entry from each readers ZSET, and
-- touches nothing else. Where a line of waiters exists and the resource is now free for its head,
-- PUBLISHes the id of the waiter now first in line only, or of the readers at the head, each on
-- its listener's channel (wakeHead, notify): one message per waiter woken, however long the line.
-- Returns how many lock keys (or reader entries) were deleted.
-- #include _compat.lua
-- #include _keys.lua
local n = resourceCount(0)
if not n then
  return malformed('')
end
-- #include _time.lua
-- #include _readers.lua
local value, leaving = ARGV[1], ARGV[2]

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
  -- Out of line first, so that the head woken next is not the holder itself.
  local left = leaving and redis.call('ZREM', KEYS[n + i], leaving) == 1
  if left then
    redis.call('ZREM', KEYS[2 * n + i], leaving)
  end
  if freed or left then
    wakeHead(i, n)
  end
end
return deleted
