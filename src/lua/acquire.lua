-- Lock every key in KEYS with value ARGV[1] for ARGV[2] ms, or none of them.
-- Returns 1 when all keys were set, 0 when any key already exists (held by another owner).
-- All-or-nothing on this member: a multi-resource lock never half-holds a member.
-- Try it: redis-cli --eval acquire.lua orders:42 , my-value 10000
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return 1
