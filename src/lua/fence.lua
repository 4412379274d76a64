-- Raise the fence counters of a lock we hold to ARGV[2], the proposed token.
-- KEYS: the n lock keys, then the member's epoch hash. ARGV: value, proposed token.
-- Returns {1 raised | 0 not raised, highest counter before, counters trusted 1/0}. Not raised
-- when a lock key no longer holds our value (the write must happen while we hold the lock: that
-- is what orders it before any later holder's reading), or when a counter is already at or above
-- the proposal (then propose higher).
local n = #KEYS - 1
if n < 1 then
  return redis.error_reply('quorumlock: expected the lock keys and the epoch key, got ' .. #KEYS)
end
local epoch = KEYS[#KEYS]
local proposed = tonumber(ARGV[2])
for i = 1, n do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return {0, 0, 0}
  end
end
local genesis = redis.call('HGET', epoch, 'genesis') == '1'
local highest, trusted = 0, 1
for i = 1, n do
  local counter = tonumber(redis.call('HGET', epoch, 'fence:' .. KEYS[i]))
  if counter then
    highest = math.max(highest, counter)
  elseif not genesis then
    trusted = 0
  end
end
if highest >= proposed then
  return {0, highest, trusted}
end
for i = 1, n do
  redis.call('HSET', epoch, 'fence:' .. KEYS[i], proposed)
end
return {1, highest, trusted}
