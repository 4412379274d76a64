-- The two ends of an acquire on this member, the same for a writer and a reader (their replies are
-- decoded in src/store/protocol.ts): granted, refused, and whether this run repeats one (holdsAll).
-- Provides: granted, refused, holdsAll
-- Needs: _time.lua (now), _quarantine.lua (quarantineLeft), _fence.lua (fenceReading),
--   _readers.lua (holds)

-- Granted (the lock keys, or the reader entries, are set): 1 when this member counts in the epoch
-- the caller last saw settled (or quarantine and fencing are both off); otherwise {1 | 3
-- (quarantined), quarantine ms left, fence counter, counter trusted 1/0, epoch id}.
-- `lined`: the resources whose line exists (nil: none, the uncontended case).
local function granted(epoch, epochId, since, settled, quarantine, fencing, n, waiter, ttl, lined)
  -- A waiter that wins keeps its place in line until its release leaves it (release.lua), but
  -- here no longer than this hold's ttl (its lease, ~3 retry intervals, may be longer): one that
  -- dies unreleased holds nobody up past its key, unless it shortened its hold by an extend (then
  -- at most its lease). Only shortened, never lengthened: an attempt that fails after all keeps at
  -- most the lease it had. Only commands the documented ACL allows (docs/operations.md).
  if lined then
    local ends = now() + ttl
    for i = 1, n do
      if lined[i] then
        local leases = KEYS[2 * n + i]
        for _, later in ipairs(redis.call('ZRANGEBYSCORE', leases, '(' .. ends, '+inf')) do
          if later == waiter then
            redis.call('ZADD', leases, ends, waiter)
            break
          end
        end
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
-- Returns {why, heldForMs, place, epoch id, quarantine ms left, own}: why = 0 held by another
-- owner, 2 free but kept for an earlier waiter; heldForMs = the longest PTTL among held keys (-1:
-- none held, -2: held without an expiry); place = 0-based place in the longest line (-1: not in
-- line); with fencing, the epoch and whether it is past its quarantine (0: yes, -1: not known), so
-- that a fence sync may be bound to it (only an epoch past its quarantine may be synced: see
-- fence.lua); own = 1 when some key or reader entry here still holds `value` (see holdsAll).
local function refused(n, value, waiter, ticket, lease, heldFor, forever, epoch, epochId, since, quarantine, fencing)
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
  if epochId and quarantine ~= 0 and fencing then
    settledLeft = quarantineLeft(epoch, since, quarantine)
  end
  local own = 0
  for i = 1, n do
    if holds(i, n, value) then
      own = 1
    end
  end
  if forever then
    return {0, -2, place, refusedEpoch, settledLeft, own}
  end
  if heldFor == -1 then
    return {2, -1, place, refusedEpoch, settledLeft, own}
  end
  return {0, heldFor, place, refusedEpoch, settledLeft, own}
end

-- Whether every resource here is held by `value` already: this is a second run of the same call
-- (the value is new for each attempt). ioredis re-sends a call that got no answer when it
-- reconnects (docs/internals.md#re-send-after-reconnect), and over a delayed link the first copy may even run after the second.
-- Either run then answers as the first did, granted, and touches nothing: deleting the keys would
-- take a won lock from its holder, refusing would leave them behind a skipped rollback. A
-- refusal therefore proves that nothing of the attempt is here, unless it says `own` (some of its
-- keys but not all: one expired or was evicted between the two runs); the rollback skips only
-- members that refused without it (src/quorum/release.ts, rollback).
local function holdsAll(n, value)
  for i = 1, n do
    if not holds(i, n, value) then
      return false
    end
  end
  return true
end
