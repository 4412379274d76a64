-- A waiter gives up: it leaves the line (with its handover request), takes back any handover
-- value a release may have set for it meanwhile, and if the resource is free for whoever is first
-- now, they are told (_wake.lua, wakeHead).
-- KEYS: resourceKeys (5 per resource), then the epoch hash. ARGV[1]: waiter id. ARGV[2]: its
-- handover values ('' = none, space-separated: _readers.lua, takeBack).
-- #include _compat.lua
-- #include _keys.lua
-- #include _epoch.lua
local EVICTIONS = false
-- #include _bound.lua
local n = resourceCount(0)
if not n then
  return malformed(' and the epoch key')
end
-- #include _readers.lua
-- #include _wake.lua
local waiter, abandoned = ARGV[1], ARGV[2] or ''
for i = 1, n do
  local freed = takeBack(i, abandoned)
  dropRequests(KEYS[4 * n + i], waiter)
  local left = redis.call('ZREM', KEYS[n + i], waiter) == 1
  if left then
    redis.call('ZREM', KEYS[2 * n + i], waiter)
  end
  if freed or left then
    wakeHead(i, n)
  end
end
return 1
