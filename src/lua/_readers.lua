-- Shared holders and the line, per resource i of n: live readers, pruning the line (with its
-- handover requests), taking back handover values, and whether a value holds a resource here.
-- Provides: liveReaders, dropRequests, pruneLine, takeBack, holds
-- Needs: _compat.lua (unpack), _keys.lua (isShared), _time.lua (now)
--
-- The readers key is a ZSET: a shared holder's lock value → when its hold ends, in ms on this
-- member's clock (now + ttl when the script ran: the same timing as a lock key's PX). The key's
-- own PEXPIRE is kept at the latest of them, so it vanishes by itself with its last reader; an
-- entry past its time is dead whether or not it was pruned yet, and every reader prunes first.

-- Removes expired readers; returns how many are alive.
local function liveReaders(readers)
  if redis.call('EXISTS', readers) == 0 then
    return 0
  end
  redis.call('ZREMRANGEBYSCORE', readers, '-inf', now())
  return redis.call('ZCARD', readers)
end

-- Drops the handover requests of `waiters` from the hash `requests`. pcall: a least-privilege ACL
-- user set up before hand-overs existed has no HDEL; its calls still work, and its requests only
-- go with their line (docs/operations.md, "Upgrading the ACL").
local function dropRequests(requests, ...)
  redis.pcall('HDEL', requests, ...)
end

-- Removes the waiters of resource i of n whose lease ran out (they died or gave up without
-- saying so), with their handover requests.
local function pruneLine(i, n)
  local leases = KEYS[2 * n + i]
  local stale = redis.call('ZRANGEBYSCORE', leases, '-inf', now())
  if #stale > 0 then
    redis.call('ZREM', KEYS[n + i], unpack(stale))
    redis.call('ZREM', leases, unpack(stale))
    dropRequests(KEYS[4 * n + i], unpack(stale))
  end
end

-- Whether the lock key of resource i holds one of `values` (handover values, space-separated,
-- of a waiter that no longer counts on them: protocol.ts, HandoverRequest.abandoned): then it is deleted here.
-- Those values were only ever set by a release handing the lock over (_wake.lua) and are
-- counted by nobody, so deleting them takes nothing from anyone.
local function takeBack(i, values)
  if values == '' then
    return false
  end
  local current = redis.pcall('GET', KEYS[i])
  if type(current) ~= 'string' or not string.find(' ' .. values .. ' ', ' ' .. current .. ' ', 1, true) then
    return false
  end
  redis.call('DEL', KEYS[i])
  return true
end

-- Whether `value` holds resource i of n here: its lock key, or for a shared value a live reader
-- entry. pcall: GET on a key of the user's own of another type (a hash at the same name) is an
-- error, and such a key is never ours.
local function holds(i, n, value)
  if isShared(value) then
    local ends = tonumber(redis.call('ZSCORE', KEYS[3 * n + i], value))
    return ends ~= nil and ends > now()
  end
  return redis.pcall('GET', KEYS[i]) == value
end
