-- Set the expiry of every key in KEYS to ARGV[2] ms, but only if every key still holds ARGV[1].
-- Returns 1 when extended, 0 when any key is gone or held by another value (nothing is changed).
-- Try it: redis-cli --eval extend.lua orders:42 , my-value 10000
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
