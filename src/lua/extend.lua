-- Set the expiry of every key in KEYS to ARGV[2] ms, but only if every key still holds ARGV[1].
-- All or nothing: unless it replies 1, nothing is changed. The reply is a status code:
--    1  extended: every key held ARGV[1] and now expires in ARGV[2] ms;
--    0  gone: some key no longer exists (it expired, was evicted or deleted, or the member forgot
--       it in a restart or a flush), and no key holds another value;
--   -1  taken: some key holds another value (another owner's).
-- Further refusals (an epoch check, say) take further negative codes. A gone key is never set
-- again here: re-creating it would hide the gap in which another owner could have held it.
-- KEYS end with the epoch hash and ARGV start with the epoch id (_bound.lua).
-- #include _compat.lua
-- #include _epoch.lua
local EVICTIONS = false
-- #include _bound.lua
local gone = false
for i = 1, #KEYS do
  local held = redis.call('GET', KEYS[i])
  if not held then
    gone = true
  elseif held ~= ARGV[1] then
    return -1
  end
end
if gone then
  return 0
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
