-- Acquire, with a fair line of waiters, the restart quarantine and (optionally) fence readings.
-- KEYS: the n lock keys, then their n line keys, then their n lease keys, then the member's epoch
--       hash (since = when this server process's data began, its run id, genesis, fence
--       counters; quorumlock:epoch, or one per hash slot on a Redis Cluster).
-- ARGV: value, ttl ms, waiter id, ticket (arrival order, the same on every member), lease ms
--       (how long a refused caller keeps its place without coming back; 0 = do not join the line),
--       quarantine ms (0 = off), fencing (1 = report fence counters), the epoch's `since` as last
--       seen settled by this client ('' = not known: then the member's TIME decides).
-- Returns 1 when every lock key was set (all or nothing) and this member counts. When the keys
-- were set but the member's data is younger than the quarantine, or fencing was asked for, it
-- returns {1 | 3 (quarantined), quarantine ms left, highest fence counter, counter trusted 1/0,
-- the epoch's since}.
-- Otherwise nothing is set and it returns {why, heldForMs, place}: why = 0 held by another owner,
-- 2 free but kept for an earlier waiter; heldForMs = the longest PTTL among held keys (-1: none
-- held); place = 0-based place in the longest line (-1: not in line).
local n = (#KEYS - 1) / 3
-- Refuse malformed calls outright: with a wrong key count the loops below would run zero times
-- and a lock could be reported that was never set.
if n < 1 or n ~= math.floor(n) then
  return redis.error_reply('quorumlock: expected 3 keys per resource (lock, line, leases) and the epoch key, got ' .. #KEYS)
end
local epoch = KEYS[#KEYS]
local value, ttl, waiter, ticket, lease = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local quarantine, fencing, settled = tonumber(ARGV[6]), ARGV[7] == '1', ARGV[8]
-- #include _epoch.lua
-- #include _fence.lua

local heldFor, ahead = -1, false
for i = 1, n do
  local pttl = redis.call('PTTL', KEYS[i])
  if pttl ~= -2 then
    heldFor = math.max(heldFor, pttl, 0)
  end
  local line, leases = KEYS[n + i], KEYS[2 * n + i]
  if redis.call('EXISTS', line) == 1 then
    -- Waiters whose lease ran out died or gave up without saying so: they lose their place.
    local stale = redis.call('ZRANGEBYSCORE', leases, '-inf', now())
    if #stale > 0 then
      redis.call('ZREM', line, unpack(stale))
      redis.call('ZREM', leases, unpack(stale))
    end
    local head = redis.call('ZRANGE', line, 0, 0)[1]
    if head and head ~= waiter then
      ahead = true
    end
  end
end

if heldFor == -1 and not ahead then
  -- A waiter keeps its place here even though its key is set: this attempt may still fail on
  -- the quorum and be rolled back, and a waiter that left some lines but not others would make
  -- members disagree about who is first. It leaves every line only once it has won.
  for i = 1, n do
    redis.call('SET', KEYS[i], value, 'PX', ttl)
  end
  if quarantine == 0 and not fencing then
    return 1
  end
  -- The epoch of this server process. Until a whole quarantine (the longest ttl in use) has
  -- passed since it began, another client may still hold a lock this member forgot (see
  -- currentEpoch for how it can forget), so its yes must not count.
  local since = currentEpoch(epoch)
  -- The same epoch this client already saw past its quarantine: still past it, no TIME needed.
  if since == settled and not fencing then
    return 1
  end
  local left = 0
  if quarantine > 0 then
    left = math.max(0, tonumber(since) + quarantine - now())
  end
  local status = 1
  if left > 0 then
    status = 3
  end
  if not fencing then
    return {status, left, 0, 0, since}
  end
  local highest, trusted = fenceReading(epoch, n)
  return {status, left, highest, trusted, since}
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
if heldFor == -1 then
  return {2, -1, place}
end
return {0, heldFor, place}
