-- Reads the leader record of an election (src/election/): who holds the election's lock,
-- readable without the lock's value, which is a secret capability (leader.lua writes it). KEYS[1]
-- is the election's lock key, KEYS[2] its leader record (keys.ts, leaderRecordKey: same hash
-- slot), KEYS[3] the member's epoch hash. The record is "<sha1 of the lock value> <term> <id>": it
-- names the holder only while the lock key still holds the value whose digest it carries, so a
-- record outliving its lock (a resign, an expiry) is never read as a leader.
-- ARGV[1] = the quarantine ms (0 = off; negative: counted from the restart). Replies { "<term> <id>" or '', PTTL of KEYS[1] (-2:
-- absent), quarantine ms left }. The quarantine left (0: past it, or off; -1: this server is not a
-- plain master) is the epoch's, as acquire.lua reads it: a member restarted empty answers
-- "absent" for a lock that may still rest on it, which is no evidence that the election is
-- vacant (src/election/judge.ts). A read: not bound to an epoch (_bound.lua binds writes).
-- Try it: redis-cli --eval election.lua quorumlock:election:{x} quorumlock:election:{x}:quorumlock:leader quorumlock:epoch , 60000
-- #include _compat.lua
-- #include _epoch.lua
-- #include _quarantine.lua
local held = redis.call('GET', KEYS[1])
local left = 0
local quarantine = tonumber(ARGV[1] or '0') or 0
if quarantine ~= 0 then
  local id, since = currentEpoch(KEYS[3], true)
  if not id then
    left = -1
  else
    left = quarantineLeft(KEYS[3], since, quarantine)
  end
end
local pttl = redis.call('PTTL', KEYS[1])
if not held then
  return { '', pttl, left }
end
local record = redis.call('GET', KEYS[2])
-- 40 hex digits, a space, then "<term> <id>".
if not record or string.sub(record, 1, 40) ~= redis.sha1hex(held) then
  return { '', pttl, left }
end
return { string.sub(record, 42), pttl, left }
