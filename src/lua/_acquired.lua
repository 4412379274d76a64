-- (Included by acquire.lua and acquireShared.lua, after _epoch.lua, _fence.lua and _readers.lua.) The two ends
-- of an acquire on this member, the same for a writer and a reader (their replies are decoded in
-- src/store/protocol.ts).

-- Granted (the lock keys, or the reader entries, are set): 1 when this member counts in the epoch
-- the caller last saw settled (or quarantine and fencing are both off); otherwise {1 | 3
-- (quarantined), quarantine ms left, fence counter, counter trusted 1/0, epoch id}.
-- `lined`: the resources whose line exists (nil: none, the uncontended case).
local function granted(epoch, epochId, since, settled, quarantine, fencing, n, waiter, ttl, lined)
  -- A waiter that wins keeps its place in line until its release leaves it (release.lua), and
  -- here exactly as long as this hold: one that dies unreleased must not keep the line once its
  -- key is gone. (Its next registration, if this attempt fails after all, sets its lease afresh.)
  -- Only commands the documented ACL allows (docs/operations.md, TLS and ACL members).
  if lined then
    for i = 1, n do
      if lined[i] and redis.call('ZRANK', KEYS[n + i], waiter) then
        redis.call('ZADD', KEYS[2 * n + i], now() + ttl, waiter)
      end
    end
  end
  if not epochId then
    return 1
  end
  -- The same epoch this client already saw past its quarantine: still past it, no TIME needed.
  if epochId == settled and not fencing then
    return 1
  end
  local left = quarantineLeft(epoch, since, quarantine)
  local status = 1
  if left > 0 then
    status = 3
  end
  if not fencing then
    return {status, left, 0, 0, epochId}
  end
  local highest, trusted = fenceReading(epoch, n)
  return {status, left, highest, trusted, epochId}
end

-- Refused (nothing set): with a lease, takes or keeps the waiter's place in every line first.
-- Returns {why, heldForMs, place, epoch id, quarantine ms left}: why = 0 held by another owner, 2
-- free but kept for an earlier waiter; heldForMs = the longest PTTL among held keys (-1: none
-- held, -2: held without an expiry); place = 0-based place in the longest line (-1: not in line);
-- with fencing, the epoch and whether it is past its quarantine (0: yes, -1: not known), so that a
-- fence sync may be bound to it (only an epoch past its quarantine may be synced: see fence.lua).
--
-- A refusal also leaves no key or reader entry holding `value` here. The value is new for each
-- attempt, so one could only come from an earlier run of this same call: ioredis re-sends a call
-- that got no answer when it reconnects (realities.md), and the second run then finds the first
-- run's keys and refuses. Cleared here, a refusal is proof that nothing of this attempt is left
-- on the member, and the attempt's rollback skips it (src/quorum/release.ts, rollback). Whoever
-- that frees the resource for is woken, as the rollback's release would have (wakeHead).
local function refused(n, value, waiter, ticket, lease, heldFor, forever, epoch, epochId, since, quarantine, fencing)
  for i = 1, n do
    if dropHold(i, n, value) then
      wakeHead(i, n)
    end
  end
  local place = -1
  if lease > 0 then
    for i = 1, n do
      local line, leases = KEYS[n + i], KEYS[2 * n + i]
      redis.call('ZADD', line, ticket, waiter)
      redis.call('ZADD', leases, now() + lease, waiter)
      -- The line vanishes by itself once every waiter in it is gone.
      if redis.call('PTTL', line) < lease then
        redis.call('PEXPIRE', line, lease)
        redis.call('PEXPIRE', leases, lease)
      end
      place = math.max(place, redis.call('ZRANK', line, waiter))
    end
  end
  local refusedEpoch, settledLeft = epochId or '', -1
  if epochId and quarantine > 0 and fencing then
    settledLeft = quarantineLeft(epoch, since, quarantine)
  end
  if forever then
    return {0, -2, place, refusedEpoch, settledLeft}
  end
  if heldFor == -1 then
    return {2, -1, place, refusedEpoch, settledLeft}
  end
  return {0, heldFor, place, refusedEpoch, settledLeft}
end
