-- The member's epoch: since when this server has held the data it holds, kept in a hash with what
-- identifies that data's lineage (currentEpoch; how much of its quarantine is left: _quarantine.lua).
-- Provides: BOUND_RUN_ID, EPOCH_MEMO, forgetEpochs, readEpoch, currentEpoch
-- Needs: _compat.lua (unpack), _time.lua (nowMs, readTime, time)

-- The run id of the process this script text was loaded into, when the client loaded a copy of
-- the script bound to it (src/members/binding.ts); false in the generic script, which reads it
-- from INFO on every call. A bound copy exists only in the script cache of the process it names:
-- the cache is not persisted, not replicated (Redis 7), and each copy carries a fresh nonce, is
-- loaded once, by MULTI/EXEC together with the INFO that proves where it ran, and is only ever
-- called by EVALSHA. Anywhere else its call fails with NOSCRIPT, never runs.
local BOUND_RUN_ID = false

-- What readEpoch found in this script run, per epoch hash and eviction check, when the calls of a
-- batch share it (src/store/batch.ts replaces this line with the batch's table); false in a call
-- of its own. A batch's calls run one after another inside one script run, so each would read
-- the same INFO text (a server changes role, lineage or eviction count only between commands)
-- and the same epoch hash, whose fields readEpoch reads only readEpoch writes: it forgets every
-- entry before it writes (forgetEpochs). So a call answered from here gets what its own reading
-- would have found at that point, and is bound (_bound.lua) exactly as it would have been.
local EPOCH_MEMO = false
local function forgetEpochs()
  if EPOCH_MEMO then
    for known in pairs(EPOCH_MEMO) do
      EPOCH_MEMO[known] = nil
    end
  end
end

-- The epoch of the data this server holds now in the hash `epoch`: its id and since, or nil when
-- this server is not a plain master (a writable replica, a KeyDB active-replica: their data can
-- be replaced by a resync, so they never count and are never written to).
--
-- A new epoch (a new id, since = now, no fence counter, not genesis) starts whenever the hash is
-- absent or names another data lineage:
-- * absent: a restart without persistence, FLUSHALL, eviction of the hash, or the first use;
-- * another run_id: a restart from disk (its last writes may be lost: the fsync window);
-- * another master_replid: a promotion or a full resync. Redis gives a master a new replication
--   id when it is promoted, and a replica takes its master's at every sync; so a failover to a
--   replica, and a failback to a demoted master whose data was replaced by a resync (its run_id
--   unchanged), both show here. Replication is asynchronous: the data may lack the last writes;
-- * with `evictions`, another evicted_keys count (INFO stats): the server evicted a key since the
--   epoch began, perhaps a lock key it held. An eviction policy can be switched on at runtime
--   (CONFIG SET) with every connection kept open, and evicts within a fraction of a second; the
--   client's own INFO poll would see it only later. Every eviction moves this counter, and the
--   scripts that grant on a key's absence (acquire, acquireShared, a hand-over) read it in the
--   same atomic run as the grant: no window. A CONFIG RESETSTAT moves it too, and ends the epoch
--   (a needless quarantine, never a missed eviction). Scripts that need no such check (a yes
--   there rests on our own key being present) skip its ~4 µs.
-- In each case locks this member once held may be missing and its fence counter may be behind:
-- nothing of the old epoch is trusted. The id is unique per member (TIME to the microsecond):
-- a call bound to an epoch (fence.lua) is refused in any other, which is what keeps a command
-- that ioredis re-sent to a new process, or that a delayed link delivered late, from acting
-- there as if in the epoch it was meant for.
local function readEpoch(epoch, evictions)
  -- INFO's replication section, with its stats section too when `evictions`. A bound copy runs
  -- only on a server whose INFO takes several sections in one call (Redis >= 7, Valkey:
  -- binding.ts, canBind), which saves a second INFO (~3 us); the generic script, which may run on
  -- Redis 6 or KeyDB (one section per call), makes two.
  local info
  if not evictions then
    info = redis.call('INFO', 'replication')
  elseif BOUND_RUN_ID then
    info = redis.call('INFO', 'replication', 'stats')
  else
    info = redis.call('INFO', 'replication') .. redis.call('INFO', 'stats')
  end
  -- `field:<value>` from an INFO section's text ('' when absent: Dragonfly has no run_id). A plain
  -- find is ~3x cheaper than a pattern over INFO's text.
  local function infoField(info, field)
    local at = string.find(info, '\n' .. field .. ':', 1, true)
    if not at then
      return ''
    end
    local from = at + #field + 2
    -- Lines end in \r\n; a last line without one runs to the end of the text.
    local stop = string.find(info, '\r', from, true) or string.find(info, '\n', from, true) or #info + 1
    return string.sub(info, from, stop - 1)
  end

  -- The replication lines are looked for from that section's header on: `#` begins only section
  -- headers, so this find is quick, and the ones below then skip the stats section, which comes
  -- first in INFO's text. In a text of another order they only miss, and a miss is read below.
  local replicationAt = string.find(info, '# Replication', 1, true) or 1
  -- Not a plain master: nothing is read or written here. The usual `role:master` line is found
  -- whole; any other text is read field by field.
  if not string.find(info, '\nrole:master\r', replicationAt, true) and infoField(info, 'role') ~= 'master' then
    return nil
  end
  local id, since, owner, lineage, evicted = unpack(redis.call('HMGET', epoch, 'id', 'since', 'run_id', 'replid', 'evicted'))
  -- The usual case: every fact the epoch recorded is still what the server says, each looked for
  -- as a whole line of INFO's text (`\nfield:value\r`, a plain find). A match means INFO says
  -- exactly that value; any other answer (a change, a text without \r) takes the reading below,
  -- which decides as if this check were not there. Written out, and the reading's other helpers
  -- made only when it runs: every writing script passes here on every call.
  if id and evicted and lineage and string.find(info, '\nmaster_replid:' .. lineage .. '\r', replicationAt, true) and (not evictions or string.find(info, '\nevicted_keys:' .. evicted .. '\r', 1, true)) then
    if BOUND_RUN_ID then
      if owner == BOUND_RUN_ID then
        return id, since
      end
    elseif owner and string.find(redis.call('INFO', 'server'), '\nrun_id:' .. owner .. '\r', 1, true) then
      return id, since
    end
  end
  local runId, replid = BOUND_RUN_ID or infoField(redis.call('INFO', 'server'), 'run_id'), infoField(info, 'master_replid')
  local replaced = id
  local evictedNow
  if evictions then
    evictedNow = infoField(info, 'evicted_keys')
  end
  if id and owner == runId and lineage == replid then
    -- An epoch begun before quorumlock counted evictions (0.1.x) starts counting now.
    if not evicted then
      forgetEpochs()
      redis.call('HSET', epoch, 'evicted', evictedNow or infoField(redis.call('INFO', 'stats'), 'evicted_keys'))
    elseif evictions and evicted ~= evictedNow then
      id = nil
    end
    if id then
      return id, since
    end
  end
  -- A new epoch begins. What it records of the process start is worked out only here, not on
  -- every call.
  -- Script calls that succeeded (or keys restored) on this process, by INFO commandstats; nil
  -- when the section cannot be read as Redis writes it (positive evidence only: our own INFO calls
  -- of this run are counted by now, with Redis 7's failed_calls).
  local function scriptedWrites()
    local stats = redis.call('INFO', 'commandstats')
    if not string.find(stats, 'cmdstat_info:calls=%d+,[^\r\n]*failed_calls=%d+') then
      return nil
    end
    local count = 0
    for name, calls, rest in string.gmatch(stats, 'cmdstat_([^:]+):calls=(%d+)([^\r\n]*)') do
      local failed = 0
      if string.find(name, '^eval') or string.find(name, '^fcall') then
        failed = tonumber(string.match(rest, 'failed_calls=(%d+)') or '0')
      elseif not string.find(name, '^restore') then
        calls = 0
      end
      count = count + tonumber(calls) - failed
    end
    return count
  end

  -- The process start (ms, server clock) when it bounds every lock this server may have forgotten,
  -- else nil; recorded as the epoch's `restart`, which only clients that chose to count the
  -- quarantine from the restart use (quarantineLeft). Proven case: the process started at S and
  -- since then has run no script that succeeded (so it granted no lock: every grant is a script),
  -- restored no key, was never promoted (second_repl_offset -1: its data never came by
  -- replication) and is not a Cluster node (keys migrate in). Then every lock key it ever held was
  -- granted by an earlier process, and whatever removed data since (a FLUSHALL, a wipe, an
  -- eviction) removed only locks granted before S. S comes from uptime_in_seconds, the cached
  -- whole seconds less those of the start: TIME's seconds less it are the start's whole second (or
  -- a later one), and the next second is past S. What the server cannot prove, and why it is the
  -- client's choice (docs/safety.md): that no other server served this address meanwhile (a
  -- standby started early, then given the address), and that its clock was not stepped forward
  -- since it started (uptime is wall-clock time). CONFIG RESETSTAT clears the counts.
  local function restartedAt(replication)
    local server = redis.call('INFO', 'server')
    local uptime = tonumber(infoField(server, 'uptime_in_seconds'))
    if not uptime or infoField(server, 'redis_mode') ~= 'standalone' or infoField(replication, 'second_repl_offset') ~= '-1' or scriptedWrites() ~= 0 then
      return nil
    end
    return math.min(nowMs, (tonumber(time[1]) - uptime + 1) * 1000)
  end

  -- A script that skips the eviction check has not read the count yet: a new epoch records it.
  evictedNow = evictedNow or infoField(redis.call('INFO', 'stats'), 'evicted_keys')
  forgetEpochs()
  redis.call('DEL', epoch)
  readTime()
  -- The server's time to the µs: a member never begins two epochs in one µs, and a call bound to
  -- an old epoch could find its id again only if the clock stepped back to that very µs.
  id = time[1] .. string.format('%06d', tonumber(time[2]))
  since = tostring(nowMs)
  redis.call('HSET', epoch, 'id', id, 'since', since, 'run_id', runId, 'replid', replid, 'evicted', evictedNow)
  local restart = restartedAt(info)
  if restart then
    redis.call('HSET', epoch, 'restart', restart)
  end
  -- It replaced an epoch of another lineage (or one that evicted): not a member with no data yet.
  if replaced then
    redis.call('HSET', epoch, 'replaced', '1')
  end
  return id, since
end

-- The epoch, as readEpoch reads it (once per batch when the calls share EPOCH_MEMO).
local function currentEpoch(epoch, evictions)
  if not EPOCH_MEMO then
    return readEpoch(epoch, evictions)
  end
  local key = (evictions and 'evictions ' or 'none ') .. epoch
  local known = EPOCH_MEMO[key]
  if not known then
    local id, since = readEpoch(epoch, evictions)
    known = {id, since}
    EPOCH_MEMO[key] = known
  end
  return known[1], known[2]
end
