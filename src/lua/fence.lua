-- Raise the fence counters of the lock's resources to ARGV[2].
-- KEYS: the n lock keys, then the member's epoch hash (a shared lock: see below).
-- ARGV: value, token, mode, epoch id, floor ('' or absent: none; sync only). mode 'propose': a candidate token, written only where the
--       reading is trusted; 'sync': an established token, written also where it is not, which is
--       how a member that lost its counter becomes trusted again. The epoch id is the one this
--       member's acquire reply named in the same attempt: the call is refused in any other epoch.
--       A sync needs one; a propose may pass '' (the member was not heard in the acquire round):
--       raising a trusted counter is safe in any epoch, as the established token is decided
--       within the lock's validity (src/quorum/acquire.ts).
-- Returns {1 raised | 0 not raised, highest counter before, reading trusted 1/0, the epoch id,
-- the member's max, complete 1/0 (genesis or a floor), and, only when 1, gone: the lock is no
-- longer held here}. A sync with a floor also repairs an incomplete epoch (sets its floor). Not
-- raised when the server's epoch is not the one named (then {0, 0, 0, '', 0, 0}), when proposing
-- and a lock key no longer holds our value (then {0, 0, 0, epoch id, 0, 0, 1}: a candidate must
-- be written while we hold the lock: that is what orders it before any later holder's reading),
-- when the counter is already at or above the token (then propose higher), or when proposing to
-- an untrusted member: a candidate that loses must never make a forgetful member look as if it
-- knew the latest token.
--
-- Why the epoch binding makes a sync safe: a sync writes token t (and a floor) into epoch E,
-- making E's readings trusted, so they must cover every issued token this member held in an
-- earlier epoch. The client syncs only an epoch past its quarantine, that named itself before
-- the client sent the propose round that established t (src/quorum/fence.ts has the argument). A sync needs no lock key: it raises a counter to an established token,
-- which is how members that answered 'taken' (a waiter took over while a release was still on
-- its way) are repaired too. A sync that ran in any other epoch would break this: ioredis
-- re-sends an unanswered acquire and sync to the new process after a restart, where the sync
-- would otherwise write an old token into a new epoch that never saw the tokens issued since
-- (issue 10, defect 1).
-- A shared (reader) lock (its value starts with SHARED_MARK, protocol.ts) holds by its entries in
-- the readers ZSETs, not by lock keys: KEYS are then the n lock keys, their n reader keys, then
-- the epoch hash, and a propose needs a live entry in each. Readers and writers raise the same
-- per-resource counter, so their tokens are ordered against each other by the same argument: a
-- token is written while its holder holds, before any later holder of the other kind could
-- (acquire.lua and acquireShared.lua exclude each other on a member).
-- #include _compat.lua
-- #include _epoch.lua
local EVICTIONS = false
-- #include _bound.lua
-- #include _fence.lua
local shared = string.sub(ARGV[1], 1, 1) == '~'
local n = #KEYS
if shared then
  n = math.floor(n / 2)
end
if n < 1 or (shared and #KEYS ~= 2 * n) then
  return redis.error_reply('quorumlock: expected the lock keys (then, shared, the reader keys) and the epoch key, got ' .. #KEYS + 1)
end
local epoch = EPOCH
local proposed, sync, floor = tonumber(ARGV[2]), ARGV[3] == 'sync', tonumber(ARGV[5] or '')
local current = epochId
if (ARGV[4] ~= '' and current ~= ARGV[4]) or (sync and ARGV[4] == '') then
  return {0, 0, 0, '', 0, 0}
end
if not sync then
  for i = 1, n do
    local holds
    if shared then
      local ends = tonumber(redis.call('ZSCORE', KEYS[n + i], ARGV[1]))
      holds = ends ~= nil and ends > now()
    else
      holds = redis.call('GET', KEYS[i]) == ARGV[1]
    end
    if not holds then
      return {0, 0, 0, current, 0, 0, 1}
    end
  end
end
local highest, trusted, complete = fenceReading(epoch, n)
if sync and floor and complete == 0 then
  -- The repair: a floor read from a quorum of complete members (fence.ts says why it covers
  -- every token this member may have held before this epoch began).
  redis.call('HSET', epoch, 'floor', floor)
  raiseMax(epoch, floor)
  complete = 1
end
if highest >= proposed or (trusted == 0 and not sync) then
  return {0, highest, trusted, current, tonumber(redis.call('HGET', epoch, 'max') or '0'), complete}
end
for i = 1, n do
  local field = 'fence:' .. KEYS[i]
  if (tonumber(redis.call('HGET', epoch, field)) or 0) < proposed then
    redis.call('HSET', epoch, field, proposed)
  end
end
raiseMax(epoch, proposed)
return {1, highest, trusted, current, tonumber(redis.call('HGET', epoch, 'max')), complete}
