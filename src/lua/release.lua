-- Release, and hand the resource to the first waiter in line.
-- KEYS: the n lock keys, then their n line keys, then their n lease keys. ARGV[1]: value.
-- Deletes each lock key that still holds ARGV[1]; leaves keys of other owners alone. Where a line
-- of waiters exists, PUBLISHes to the channel of the waiter now first in line only
-- (WAITER_CHANNEL .. id): one message per member per release, however long the line, and
-- only that waiter wakes up. Returns how many keys were deleted.
-- #include _compat.lua
-- #include _keys.lua
local n = resourceCount(0)
if not n then
  return malformed('')
end
-- #include _time.lua
local deleted = 0
for i = 1, n do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
    local line, leases = KEYS[n + i], KEYS[2 * n + i]
    if redis.call('EXISTS', line) == 1 then
      local stale = redis.call('ZRANGEBYSCORE', leases, '-inf', now())
      if #stale > 0 then
        redis.call('ZREM', line, unpack(stale))
        redis.call('ZREM', leases, unpack(stale))
      end
      local head = redis.call('ZRANGE', line, 0, 0)[1]
      if head then
        redis.call('PUBLISH', WAITER_CHANNEL .. head, KEYS[i])
      end
    end
  end
end
return deleted
