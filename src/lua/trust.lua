-- An operator declares this member trusted: a brand-new member that never held a lock or a
-- fence counter. Ends its quarantine (since is set a whole quarantine back) and marks it genesis,
-- so absent fence counters read as 0. Never run automatically: on a member that lost data it
-- would hide exactly the hazard the quarantine guards against.
-- KEYS: the epoch hash. ARGV: quarantine ms. Returns the quarantine ms that was left (0: none).
-- #include _epoch.lua
local since = tonumber(currentEpoch(KEYS[1]))
local left = math.max(0, since + tonumber(ARGV[1]) - now())
if left > 0 then
  redis.call('HSET', KEYS[1], 'since', now() - tonumber(ARGV[1]))
end
redis.call('HSET', KEYS[1], 'genesis', '1')
return left
