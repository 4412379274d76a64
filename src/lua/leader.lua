-- Writes the leader record of an election (election.lua reads it): KEYS[1] the election's lock
-- key, KEYS[2] its leader record; ARGV[1] the lock value, ARGV[2] "<term> <id>". Only while
-- KEYS[1] holds ARGV[1]: sets the record with KEYS[1]'s remaining PTTL and replies 1; otherwise
-- replies 0 and writes nothing (a lock lost meanwhile never gets a record). Bound to the epoch
-- (_bound.lua): KEYS end with the epoch hash, ARGV start with its id.
-- #include _compat.lua
-- #include _epoch.lua
local EVICTIONS = false
-- #include _bound.lua
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local pttl = redis.call('PTTL', KEYS[1])
if pttl <= 0 then
  return 0
end
redis.call('SET', KEYS[2], redis.sha1hex(ARGV[1]) .. ' ' .. ARGV[2], 'PX', pttl)
return 1
