-- (Included by acquire.lua, release.lua and leave.lua.) KEYS hold 3 keys per resource: the n lock
-- keys, then their n line keys, then their n lease keys (src/store/keys.ts, resourceKeys), and
-- `extra` keys after them (acquire: the epoch hash). The number of resources, or nil for a
-- malformed call, which the script refuses outright: with a wrong key count its loops would run
-- zero times, and an acquire would report a lock it never set.
local function resourceCount(extra)
  local keys = #KEYS - extra
  if keys < 3 or keys % 3 ~= 0 then
    return nil
  end
  -- math.floor: an integer in Lua 5.4 too (`/` alone yields a float there).
  return math.floor(keys / 3)
end

local function malformed(expected)
  return redis.error_reply('quorumlock: expected 3 keys per resource (lock, line, leases)' .. expected .. ', got ' .. #KEYS)
end

-- The channel a waiter listens on: WAITER_CHANNEL .. its id (keys.ts, waiterChannel).
local WAITER_CHANNEL = 'quorumlock:waiter:'
