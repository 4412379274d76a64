-- The layout of KEYS, and what a script shares with the client by name: how many resources a call
-- names (resourceCount; malformed refuses a wrong count), the shared mark (isShared), and the
-- channel a waiter listens on (notify).
-- Provides: resourceCount, malformed, SHARED_MARK, isShared, WAITER_CHANNEL, notify, listening
-- Needs: nothing

-- KEYS hold 5 keys per resource: the n lock keys, then their n line keys, then their n lease
-- keys, then their n reader keys, then their n handover keys (src/store/keys.ts, resourceKeys and
-- KEYS_PER_RESOURCE), and `extra` keys after them (acquire, release, leave: the epoch hash). The number of resources, or nil for a malformed call, which the
-- script refuses outright: with a wrong key count its loops would run zero times, and an acquire
-- would report a lock it never set.
local function resourceCount(extra)
  local keys = #KEYS - extra
  if keys < 5 or keys % 5 ~= 0 then
    return nil
  end
  -- math.floor: an integer in Lua 5.4 too (`/` alone yields a float there).
  return math.floor(keys / 5)
end

local function malformed(expected)
  return redis.error_reply('quorumlock: expected 5 keys per resource (lock, line, leases, readers, handover)' .. expected .. ', got ' .. #KEYS)
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
-- last '.', without SHARED_MARK: keys.ts, waiterChannel), the message its id, or with `stamp`
-- "<id> <stamp>": the lock was handed to it, by its handover request of that stamp (_wake.lua;
-- protocol.ts, readWaiterMessage). A waiter of a quorumlock before per-Redlock channels (0.1.0: its
-- id is `<process>.<n>`, one '.') listens on a channel of its own, for the lock key: it is told
-- so, and a rolling upgrade still wakes it (it never asks for a handover).
local function notify(waiter, lock, stamp)
  local id = waiter
  if isShared(id) then
    id = string.sub(id, #SHARED_MARK + 1)
  end
  local listener = string.match(id, '^(.*)%.[^.]*$') or id
  if not string.find(listener, '.', 1, true) then
    redis.call('PUBLISH', WAITER_CHANNEL .. waiter, lock)
    return
  end
  if stamp then
    redis.call('PUBLISH', WAITER_CHANNEL .. listener, waiter .. ' ' .. stamp)
    return
  end
  redis.call('PUBLISH', WAITER_CHANNEL .. listener, waiter)
end

-- Whether `waiter` still waits, as far as this server can tell: a connection here is subscribed
-- to its presence channel (keys.ts, presenceChannel), which its Redlock's subscriber holds from
-- its first refusal to the end of its wait (won, given up, failed) and which goes with the connection
-- when its process dies. false when it cannot be read (an ACL user without +pubsub|numsub), and
-- on a Cluster node the subscriber may be on another node: false too, which costs a hand-over,
-- never safety.
local function listening(waiter)
  local reply = redis.pcall('PUBSUB', 'NUMSUB', WAITER_CHANNEL .. waiter)
  return type(reply) == 'table' and reply.err == nil and (tonumber(reply[2]) or 0) > 0
end
