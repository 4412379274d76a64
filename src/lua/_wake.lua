-- Who goes next once a resource is free: the head of its line is told, or handed the lock
-- outright when it asked for that (docs/handover.md has the whole argument).
-- Provides: handOver, wakeHead
-- Needs: _time.lua (now), _keys.lua (isShared, notify, listening), _epoch.lua (currentEpoch), _quarantine.lua (quarantineLeft),
--   _bound.lua (EPOCH, epochId), _readers.lua (liveReaders, pruneLine)

-- Hands resource i of n to the writer `head`, as its handover request asks ("<value> <ttl ms>
-- <quarantine ms> <stamp>", written by its own refused acquire on this member: acquire.lua), but
-- only where its own acquire, run now, would have set the key and counted: the resource is free
-- (wakeHead checked: no lock key, no live reader, `head` first in line) and, with the quarantine
-- on, this server is a plain master whose epoch is past it (the checks of acquire.lua and
-- granted() in _acquired.lua, on the same epoch hash).
-- Only while the waiter still waits, as far as this server can tell: its place in line is live
-- (its lease, renewed by each of its attempts) and its presence channel has a subscriber here
-- (listening): its Redlock holds that subscription from the start of its wait to its end, so a
-- waiter that won, gave up (even with its leave lost) or crashed is handed nothing, and a late
-- copy of one of its attempts that put it back in line hands it nothing either; its place lapses
-- with its lease, as before hand-overs existed. Then the key lives its ttl from now: at least the
-- ttl from the start of the attempt whose run wrote the request (it came before this). A waiter
-- that stops right after (it hangs, is cut off, or its host dies: the server keeps a dead host's
-- socket until TCP keepalive gives up) holds the lock for its ttl, as a holder that stops holding
-- it does (docs/handover.md, "A waiter that stops in line"). The waiter counts this hand-over
-- only for the stamp of its latest attempt, and takes its validity from that attempt's start
-- (src/quorum/handover.ts).
-- Returns the request's stamp when handed, nil otherwise.
local function handOver(i, n, head, request)
  local value, ttl, quarantine, stamp = string.match(request, '^(%S+) (%d+) (%-?%d+) (%S+)$')
  local lease = tonumber(redis.call('ZSCORE', KEYS[2 * n + i], head))
  if not value or not lease or lease <= now() or not listening(head) then
    return nil
  end
  if tonumber(quarantine) ~= 0 then
    -- A hand-over grants on the key's absence, as an acquire does: an eviction ends the epoch.
    local handEpoch, handSince = currentEpoch(EPOCH, true)
    if handEpoch ~= epochId or quarantineLeft(EPOCH, handSince, tonumber(quarantine)) > 0 then
      return nil
    end
  end
  local px = tonumber(ttl)
  redis.call('SET', KEYS[i], value, 'PX', px)
  -- Its place in line now ends with this hold or its lease, whichever comes first (never later
  -- than it was, as granted() does for a won acquire: _acquired.lua): the winner keeps it until
  -- its release (release.lua) or its next renewal, and one that never counts this hand-over
  -- holds nobody up in line past its lease.
  redis.call('ZADD', KEYS[2 * n + i], math.min(lease, now() + px), head)
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
