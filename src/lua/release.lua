-- Release, and hand the resource to whoever is first in line.
-- KEYS: the n lock keys, their n line keys, n lease keys and n reader keys. ARGV[1]: value.
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
local value = ARGV[1]
local deleted = 0
if isShared(value) then
  for i = 1, n do
    if redis.call('ZREM', KEYS[3 * n + i], value) == 1 then
      deleted = deleted + 1
      wakeHead(i, n)
    end
  end
  return deleted
end
for i = 1, n do
  if redis.call('GET', KEYS[i]) == value then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
    wakeHead(i, n)
  end
end
return deleted
