-- An operator declares this member trusted: a brand-new member that never held a lock or a
-- fence counter. Ends its quarantine (since is set a whole quarantine back) and marks it genesis,
-- so absent fence counters read as 0. Never run automatically: on a member that lost data it
-- would hide exactly the hazard the quarantine guards against.
-- KEYS: the epoch hash. ARGV: quarantine ms. Returns the quarantine ms that was left (0: none).
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local since = tonumber(redis.call('HGET', KEYS[1], 'since'))
local left = 0
if since then
  left = math.max(0, since + tonumber(ARGV[1]) - now)
end
if not since or left > 0 then
  redis.call('HSET', KEYS[1], 'since', now - tonumber(ARGV[1]))
end
redis.call('HSET', KEYS[1], 'genesis', '1')
return left
