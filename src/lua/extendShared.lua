-- Extend a shared (reader) lock: set its entry in every readers ZSET to end ARGV[2] ms from now,
-- but only if every entry is still alive. All or nothing, and extend.lua's replies:
--    1  extended;
--    0  gone: some entry no longer exists or is past its time (expired, deleted, or the member
--       forgot it in a restart or a flush). A gone entry is never set again here: re-creating it
--       would hide the gap in which a writer could have held the resource.
-- KEYS: the n lock keys, their n line keys, n lease keys and n reader keys. ARGV: value, ttl ms.
-- (-1, taken, does not arise: a reader's entry is its own, nobody else writes it.)
-- #include _compat.lua
-- #include _keys.lua
-- #include _epoch.lua
local EVICTIONS = false
-- #include _bound.lua
local n = resourceCount(0)
if not n then
  return malformed('')
end
local value, ttl = ARGV[1], tonumber(ARGV[2])
for i = 1, n do
  local ends = tonumber(redis.call('ZSCORE', KEYS[3 * n + i], value))
  if not ends or ends <= now() then
    return 0
  end
end
local expires = now() + ttl
for i = 1, n do
  local readers = KEYS[3 * n + i]
  -- Every entry was just seen alive: a plain ZADD only moves its end.
  redis.call('ZADD', readers, expires, value)
  if redis.call('PTTL', readers) < ttl then
    redis.call('PEXPIRE', readers, ttl)
  end
end
return 1
