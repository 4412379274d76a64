-- A waiter gives up: leave the line, and if the resource is free for whoever is first now, wake
-- them (wakeHead).
-- KEYS: the n lock keys, their n line keys, n lease keys and n reader keys. ARGV[1]: waiter id.
-- #include _compat.lua
-- #include _keys.lua
local n = resourceCount(0)
if not n then
  return malformed('')
end
-- #include _time.lua
-- #include _readers.lua
for i = 1, n do
  local line, leases = KEYS[n + i], KEYS[2 * n + i]
  if redis.call('ZREM', line, ARGV[1]) == 1 then
    redis.call('ZREM', leases, ARGV[1])
    wakeHead(i, n)
  end
end
return 1
