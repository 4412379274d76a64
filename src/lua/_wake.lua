-- Who goes next once a resource is free: the head of its line is told, or handed the lock
-- outright when it asked for that (docs/handover.md has the whole argument).
-- Provides: handOver, wakeHead
-- Needs: _time.lua (now), _keys.lua (isShared, notify), _epoch.lua (currentEpoch, quarantineLeft),
--   _bound.lua (EPOCH, epochId), _readers.lua (liveReaders, pruneLine)

-- Hands resource i of n to the writer `head`, as its handover request asks ("<value> <ttl ms>
-- <quarantine ms> <stamp>", written by its own refused acquire on this member: acquire.lua), but
-- only where its own acquire, run now, would have set the key and counted: the resource is free
-- (wakeHead checked: no lock key, no live reader, `head` first in line) and, with the quarantine
-- on, this server is a plain master whose epoch is past it (the checks of acquire.lua and
-- granted() in _acquired.lua, on the same epoch hash).
-- The key lives its ttl, but never past the waiter's place in line (its lease): a waiter that
-- died in line (it comes back every retry delay while alive, and its lease is 3 of those) holds
-- the lock no longer than its place. The run of the acquire that wrote the request also started
-- the lease, for at least the ttl (a waiter asks only then: handover.ts, handsOver), and this
-- hand-over comes after that run: so the key lives at least the ttl from that attempt's start.
-- The waiter counts this hand-over only for the stamp of its latest attempt, and takes its
-- validity from that attempt's start (src/quorum/handover.ts).
-- Returns the request's stamp when handed, nil otherwise.
local function handOver(i, n, head, request)
  local value, ttl, quarantine, stamp = string.match(request, '^(%S+) (%d+) (%-?%d+) (%S+)$')
  local lease = tonumber(redis.call('ZSCORE', KEYS[2 * n + i], head))
  if not value or not lease then
    return nil
  end
  local px = math.min(tonumber(ttl), lease - now())
  if px <= 0 then
    return nil
  end
  if tonumber(quarantine) ~= 0 then
    -- A hand-over grants on the key's absence, as an acquire does: an eviction ends the epoch.
    local handEpoch, handSince = currentEpoch(EPOCH, true)
    if handEpoch ~= epochId or quarantineLeft(EPOCH, handSince, tonumber(quarantine)) > 0 then
      return nil
    end
  end
  redis.call('SET', KEYS[i], value, 'PX', px)
  -- Its place in line now ends with this hold (never later than it was): the winner keeps it
  -- until its release (release.lua), and one that dies holding it holds nobody up past its key,
  -- as granted() does for a won acquire (_acquired.lua).
  redis.call('ZADD', KEYS[2 * n + i], now() + px, head)
  return stamp
end

-- Tells whoever may enter now that they are first: a writer at the head when nobody holds the
-- resource (handed the lock if it asked: handOver), or the readers at the head (up to the first
-- writer) when no writer holds it. A wake-up that turns out early costs the waiter one refused
-- attempt; a missed one costs it a retry delay, never safety.
local function wakeHead(i, n)
  local lock, line = KEYS[i], KEYS[n + i]
  if redis.call('EXISTS', line) == 0 or redis.call('EXISTS', lock) == 1 then
    return
  end
  pruneLine(i, n)
  local waiters = redis.call('ZRANGE', line, 0, -1)
  local head = waiters[1]
  if not head then
    return
  end
  if not isShared(head) then
    if liveReaders(KEYS[3 * n + i]) == 0 then
      local request = redis.call('HGET', KEYS[4 * n + i], head)
      notify(head, lock, request and handOver(i, n, head, request))
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
