-- Reads a semaphore's permits on this member (src/semaphore/probe.ts): the PTTL of every permit's
-- lock key (-2: absent, -1: no expiry) and the length of every permit's line (ZCARD: its waiters,
-- lapsed places included). KEYS: 5 per permit, laid out as every script takes them (_keys.lua):
-- the lock keys, then their lines (the leases, readers and handover keys after them are not
-- read). ARGV: none. Replies { {pttl, ...}, {waiting, ...} }, index-aligned with the permits.
-- A read: it writes nothing and is not bound to an epoch (_bound.lua binds writes). No vote rests
-- on it: it only says which permit is worth a try (docs/semaphores.md).
-- #include _keys.lua
local n = resourceCount(0)
if not n then
  return malformed('')
end
local pttls = {}
local waiting = {}
for i = 1, n do
  pttls[i] = redis.call('PTTL', KEYS[i])
  waiting[i] = redis.call('ZCARD', KEYS[n + i])
end
return { pttls, waiting }
