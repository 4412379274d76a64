-- The protected side of fencing, for data kept in Redis: write ARGV[1] to KEYS[1] only if the
-- fencing token ARGV[2] is not lower than the highest token seen for it (kept in KEYS[2]). A
-- writer whose lock expired while it was paused carries an older token and is turned away.
-- Returns 1 written, 0 rejected (stale token).
local token = tonumber(ARGV[2])
local highest = tonumber(redis.call('GET', KEYS[2]))
if highest and token < highest then
  return 0
end
redis.call('SET', KEYS[2], token)
redis.call('SET', KEYS[1], ARGV[1])
return 1
