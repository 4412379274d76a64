-- The leader record of an election (src/election/): who holds the election's lock, readable
-- without the lock's value, which is a secret capability. KEYS[1] is the election's lock key,
-- KEYS[2] its leader record (keys.ts, leaderRecordKey: same hash slot). The record is
-- "<sha1 of the lock value> <term> <id>": it names the holder only while the lock key still holds
-- the value whose digest it carries, so a record outliving its lock (a resign, an expiry) is
-- never read as a leader.
--   ARGV[1] = 'write', ARGV[2] = the lock value, ARGV[3] = "<term> <id>":
--     if KEYS[1] holds ARGV[2], sets the record with KEYS[1]'s remaining PTTL and replies 1;
--     otherwise replies 0 and writes nothing (a lock lost meanwhile never gets a record).
--   ARGV[1] = 'read': replies { "<term> <id>" or '', PTTL of KEYS[1] (-2: absent) }.
-- Try it: redis-cli --eval election.lua quorumlock:election:{x} quorumlock:election:{x}:quorumlock:leader , read
local held = redis.call('GET', KEYS[1])
if ARGV[1] == 'write' then
  if held ~= ARGV[2] then
    return 0
  end
  local pttl = redis.call('PTTL', KEYS[1])
  if pttl <= 0 then
    return 0
  end
  redis.call('SET', KEYS[2], redis.sha1hex(ARGV[2]) .. ' ' .. ARGV[3], 'PX', pttl)
  return 1
end
if ARGV[1] ~= 'read' then
  return redis.error_reply('quorumlock: election.lua expects write or read, got ' .. tostring(ARGV[1]))
end
local pttl = redis.call('PTTL', KEYS[1])
if not held then
  return { '', pttl }
end
local record = redis.call('GET', KEYS[2])
-- 40 hex digits, a space, then "<term> <id>".
if not record or string.sub(record, 1, 40) ~= redis.sha1hex(held) then
  return { '', pttl }
end
return { string.sub(record, 42), pttl }
