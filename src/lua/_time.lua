-- The server's clock, read once per script run: TIME (libfaketime moves it), as ms for expiries
-- and leases; `time` keeps the raw reply.
-- Provides: nowMs, time, readTime, now
-- Needs: nothing
local nowMs
local time
local function readTime()
  if not time then
    time = redis.call('TIME')
    nowMs = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
end
local function now()
  readTime()
  return nowMs
end
