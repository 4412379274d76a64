-- (Included by acquire.lua, acquireShared.lua, release.lua, leave.lua and extendShared.lua, after now() is
-- defined.) Shared holders and the line, per resource i of n.
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

-- Removes waiters whose lease ran out (they died or gave up without saying so).
local function pruneLine(line, leases)
  local stale = redis.call('ZRANGEBYSCORE', leases, '-inf', now())
  if #stale > 0 then
    redis.call('ZREM', line, unpack(stale))
    redis.call('ZREM', leases, unpack(stale))
  end
end

-- Tells whoever may enter now that they are first: a writer at the head when nobody holds the
-- resource, or the readers at the head (up to the first writer) when no writer holds it. A
-- wake-up that turns out early costs the waiter one refused attempt; a missed one costs it a
-- retry delay, never safety.
local function wakeHead(i, n)
  local lock, line = KEYS[i], KEYS[n + i]
  if redis.call('EXISTS', line) == 0 or redis.call('EXISTS', lock) == 1 then
    return
  end
  pruneLine(line, KEYS[2 * n + i])
  local waiters = redis.call('ZRANGE', line, 0, -1)
  local head = waiters[1]
  if not head then
    return
  end
  if not isShared(head) then
    if liveReaders(KEYS[3 * n + i]) == 0 then
      notify(head, lock)
    end
    return
  end
  for _, waiter in ipairs(waiters) do
    if not isShared(waiter) then
      return
    end
    notify(waiter, lock)
  end
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
