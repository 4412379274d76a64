-- Reads the member's epoch (beginning one where there is none, or where the data's lineage
-- changed: _epoch.lua), for a client that has not read it on this member yet: every write is
-- bound to the id read here (_bound.lua). KEYS[1]: the epoch hash. Replies the epoch id, or fails
-- with QUORUMLOCK_ROLE on a server that is not a plain master. Reply: {id, age ms} (how
-- long ago the epoch began, on the member's clock).
-- #include _compat.lua
-- #include _epoch.lua
local id, since = currentEpoch(KEYS[1], true)
if not id then
  return redis.error_reply('QUORUMLOCK_ROLE this server is not a plain master')
end
return {id, now() - tonumber(since)}
