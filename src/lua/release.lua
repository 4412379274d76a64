-- Delete each key in KEYS that still holds ARGV[1]; leave keys of other owners alone.
-- Returns how many keys were deleted (0 when the lock had expired or was never set here).
-- Try it: redis-cli --eval release.lua orders:42 , my-value
local deleted = 0
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[1] then
    redis.call('DEL', KEYS[i])
    deleted = deleted + 1
  end
end
return deleted
