-- Acquire, with a fair line of waiters, the restart quarantine and (optionally) fence readings.
-- KEYS: the n lock keys, their n line keys, n lease keys and n reader keys, then the member's epoch
--       hash (its id, since = when the data this server holds began, the run id and replication
--       id of that data, genesis, the fence counters; quorumlock:epoch, or one per hash slot on a
--       Redis Cluster).
-- ARGV: value, ttl ms, waiter id, ticket (arrival order, the same on every member), lease ms
--       (how long a refused caller keeps its place without coming back; 0 = do not join the line),
--       quarantine ms (0 = off; negative: counted from the restart), fencing (1 = report the fence counters), the id of the epoch this
--       client last saw past its quarantine ('' = none: then the member's TIME decides); then the
--       handover request (docs/handover.md; '' = none): the value a release may set for this
--       waiter, the request's stamp, and handover values it no longer counts on (space-separated),
--       taken back first.
-- Returns 1 when every lock key was set (all or nothing) and this member counts in the epoch the
-- caller last saw settled (or quarantine and fencing are both off). Otherwise, when the keys were
-- set: {1 | 3 (quarantined), quarantine ms left, fence counter, counter trusted 1/0, epoch id}.
-- When this server is not a plain master: {4}, and nothing is set.
-- Otherwise nothing is set and it returns {why, heldForMs, place, epoch id, quarantine ms left}:
-- why = 0 held by another owner (a writer, or live shared holders), 2 free but kept for an earlier waiter; heldForMs = the longest
-- PTTL among held keys (-1: none held, -2: held without an expiry); place = 0-based place in the
-- longest line (-1: not in line); the epoch id ('' with quarantine and fencing off) and its
-- quarantine left (-1: quarantine off), for a fence sync bound to it; own (_acquired.lua,
-- refused); handed: 1 when the key holds this waiter's handover value (a release handed it the
-- lock, and this attempt came first).
-- #include _compat.lua
-- #include _keys.lua
-- #include _epoch.lua
local EVICTIONS = true
-- #include _bound.lua
local n = resourceCount(0)
if not n then
  return malformed(' and the epoch key')
end
local epoch = EPOCH
local value, ttl, fencing, settled = ARGV[1], ARGV[2], ARGV[7] == '1', ARGV[8]
-- The uncontended acquire: one resource whose lock key, line and shared holders are all absent,
-- in the epoch this client already saw past its quarantine, without fencing. The full path below
-- would find nothing held and nobody ahead, set the key and return 1 from granted(): this makes
-- the same write and reply with one EXISTS for its PTTL and two EXISTS, before the definitions
-- only a held or lined resource needs are made, and its arguments read (about 4 us a call). takeBack has nothing to take
-- back from an absent key.
if n == 1 and not fencing and epochId == settled and redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[4]) == 0 then
  redis.call('SET', KEYS[1], value, 'PX', ttl)
  return 1
end
local waiter, ticket, lease, quarantine = ARGV[3], ARGV[4], tonumber(ARGV[5]), tonumber(ARGV[6])
local handover, stamp, abandoned = ARGV[9] or '', ARGV[10] or '', ARGV[11] or ''
-- #include _fence.lua
-- #include _readers.lua
-- #include _acquired.lua

-- Asks to be handed the lock at a release (_wake.lua, handOver), with the place in line a refused
-- attempt with a lease takes or keeps (its lease starts now; a hand-over by this request comes
-- later and sets the key for the ttl, so it lives at least the ttl from this run). One resource
-- only: a release frees one resource, and a waiter for several needs all of them. The request
-- carries this attempt's stamp.
local function requestHandover()
  if handover == '' or lease <= 0 or n ~= 1 then
    return
  end
  local requests = KEYS[4 * n + 1]
  redis.call('HSET', requests, waiter, handover .. ' ' .. ttl .. ' ' .. quarantine .. ' ' .. stamp)
  if redis.call('PTTL', requests) < lease then
    redis.call('PEXPIRE', requests, lease)
  end
end

local heldFor, ahead, forever, lined = -1, false, false, nil
for i = 1, n do
  takeBack(i, abandoned)
  local pttl = redis.call('PTTL', KEYS[i])
  if pttl == -1 then
    forever = true
  elseif pttl ~= -2 then
    heldFor = math.max(heldFor, pttl, 0)
  end
  -- Shared holders (acquireShared.lua) keep a writer out as a lock key does: the one extra
  -- EXISTS per resource on the uncontended path. Entries past their time are dead: dropped here.
  local readers = KEYS[3 * n + i]
  if redis.call('EXISTS', readers) == 1 then
    redis.call('ZREMRANGEBYSCORE', readers, '-inf', now())
    local last = redis.call('ZRANGE', readers, -1, -1, 'WITHSCORES')[2]
    if last then
      heldFor = math.max(heldFor, tonumber(last) - now(), 0)
    end
  end
  local line = KEYS[n + i]
  if redis.call('EXISTS', line) == 1 then
    lined = lined or {}
    lined[i] = true
    -- Waiters whose lease ran out died or gave up without saying so: they lose their place.
    pruneLine(i, n)
    local head = redis.call('ZRANGE', line, 0, 0)[1]
    if head and head ~= waiter then
      ahead = true
    end
  end
end

if heldFor == -1 and not forever and not ahead then
  -- A waiter keeps its place here even though its key is set: this attempt may still fail on
  -- the quorum and be rolled back, and a waiter that left some lines but not others would make
  -- members disagree about who is first. It leaves every line only once it has won.
  for i = 1, n do
    redis.call('SET', KEYS[i], value, 'PX', ttl)
  end
  return granted(epoch, epochId, since, settled, quarantine, fencing, n, waiter, tonumber(ttl), lined)
end

-- Held by this very attempt (a second run of the call): granted again, as the first run was.
if heldFor ~= -1 and holdsAll(n, value) then
  return granted(epoch, epochId, since, settled, quarantine, fencing, n, waiter, tonumber(ttl), lined)
end
local reply = refused(n, value, waiter, ticket, lease, heldFor, forever, epoch, epochId, since, quarantine, fencing)
requestHandover()
if handover ~= '' and redis.pcall('GET', KEYS[1]) == handover then
  reply[7] = 1
end
return reply
