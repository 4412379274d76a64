-- (Included by acquire.lua, acquireShared.lua, release.lua, leave.lua and extendShared.lua.)
-- KEYS hold 4 keys per resource: the n lock keys, then their n line keys, then their n lease
-- keys, then their n reader keys (src/store/keys.ts, resourceKeys), and `extra` keys after them
-- (acquire: the epoch hash). The number of resources, or nil for a malformed call, which the
-- script refuses outright: with a wrong key count its loops would run zero times, and an acquire
-- would report a lock it never set.
local function resourceCount(extra)
  local keys = #KEYS - extra
  if keys < 4 or keys % 4 ~= 0 then
    return nil
  end
  -- math.floor: an integer in Lua 5.4 too (`/` alone yields a float there).
  return math.floor(keys / 4)
end

local function malformed(expected)
  return redis.error_reply('quorumlock: expected 4 keys per resource (lock, line, leases, readers)' .. expected .. ', got ' .. #KEYS)
end


-- A shared (reader) lock's value and waiter id start with SHARED_MARK (protocol.ts, SHARED_MARK:
-- a character no exclusive value or waiter id contains).
local SHARED_MARK = '~'
local function isShared(name)
  return string.sub(name, 1, 1) == SHARED_MARK
end

-- The prefix of the channel a waiter listens on (keys.ts, waiterChannel).
local WAITER_CHANNEL = 'quorumlock:waiter:'

-- Tells `waiter` that it is first in line for `lock`: on its listener's channel (the id up to its
-- last '.', without SHARED_MARK: keys.ts, waiterChannel), the message its id. A waiter of a
-- quorumlock before per-Redlock channels (0.1.0: its id is `<process>.<n>`, one '.') listens on
-- a channel of its own, for the lock key: it is told so, and a rolling upgrade still wakes it.
local function notify(waiter, lock)
  local id = waiter
  if isShared(id) then
    id = string.sub(id, #SHARED_MARK + 1)
  end
  local listener = string.match(id, '^(.*)%.[^.]*$') or id
  if not string.find(listener, '.', 1, true) then
    redis.call('PUBLISH', WAITER_CHANNEL .. waiter, lock)
    return
  end
  redis.call('PUBLISH', WAITER_CHANNEL .. listener, waiter)
end
