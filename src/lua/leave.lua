-- A waiter gives up: leave the line, and if the resource is free, wake whoever is first now.
-- KEYS: the n lock keys, then their n line keys, then their n lease keys. ARGV[1]: waiter id.
-- #include _keys.lua
local n = resourceCount(0)
if not n then
  return malformed('')
end
for i = 1, n do
  local line, leases = KEYS[n + i], KEYS[2 * n + i]
  if redis.call('ZREM', line, ARGV[1]) == 1 then
    redis.call('ZREM', leases, ARGV[1])
    local head = redis.call('ZRANGE', line, 0, 0)[1]
    if head and redis.call('EXISTS', KEYS[i]) == 0 then
      redis.call('PUBLISH', WAITER_CHANNEL .. head, KEYS[i])
    end
  end
end
return 1
