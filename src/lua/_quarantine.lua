-- How much of the restart quarantine of the member's epoch (_epoch.lua) is left.
-- Provides: quarantineLeft
-- Needs: _time.lua (now)

-- Until a whole quarantine (the longest ttl in use) has passed since the epoch began, another
-- client may still hold a lock this member forgot (see currentEpoch for how it can forget), so
-- its yes must not count: the ms left of it, 0 when past. An epoch an operator declared brand
-- new (trust.lua) has forgotten nothing: no quarantine, whatever ttl the callers use. A negative
-- `quarantine` is the same length counted from the process restart where the epoch proved one
-- (restartedAt), the client's choice (src/options/settings.ts, quarantineMsOf).
local function quarantineLeft(epoch, since, quarantine)
  if quarantine == 0 or redis.call('HGET', epoch, 'genesis') == '1' then
    return 0
  end
  if quarantine < 0 then
    quarantine = -quarantine
    since = redis.call('HGET', epoch, 'restart') or since
  end
  return math.max(0, tonumber(since) + quarantine - now())
end
