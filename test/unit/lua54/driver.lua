-- Runs quorumlock's scripts under a real Lua 5.4 interpreter (Dragonfly embeds Lua 5.4), with
-- redis.call / redis.pcall answered by the test over stdin/stdout (test/unit/lua54.test.ts runs a
-- fake Redis there). Protocol, one line each, values space-separated and typed:
--   s<hex> string, i<int> integer, f<text> float, n nil/false, a<count> array (then its items),
--   e<hex> error reply, t<hex> status reply, x<type> anything else.
--   test -> driver: RUN <hex name> <hex script> <key count> <hex keys and args...>
--   driver -> test: CALL <values...>      (one redis.call / redis.pcall; the test answers one value)
--                   DONE <value>          (the script's reply, converted as Redis converts it)
--                   FAIL <hex message>    (a syntax or runtime error)
local function hex(s)
  return (s:gsub('.', function(c)
    return string.format('%02x', c:byte())
  end))
end
local function unhex(h)
  return (h:gsub('..', function(b)
    return string.char(tonumber(b, 16))
  end))
end

local function encode(value, out)
  local kind = type(value)
  if kind == 'string' then
    out[#out + 1] = 's' .. hex(value)
  elseif kind == 'number' then
    if math.type(value) == 'integer' then
      out[#out + 1] = 'i' .. string.format('%d', value)
    else
      out[#out + 1] = 'f' .. tostring(value)
    end
  elseif value == nil or value == false then
    out[#out + 1] = 'n'
  elseif value == true then
    out[#out + 1] = 'i1'
  elseif kind == 'table' then
    if type(value.err) == 'string' then
      out[#out + 1] = 'e' .. hex(value.err)
    elseif type(value.ok) == 'string' then
      out[#out + 1] = 't' .. hex(value.ok)
    else
      local items = {}
      local i = 1
      while value[i] ~= nil do
        items[i] = value[i]
        i = i + 1
      end
      out[#out + 1] = 'a' .. #items
      for _, item in ipairs(items) do
        encode(item, out)
      end
    end
  else
    out[#out + 1] = 'x' .. kind
  end
  return out
end

-- A reply from the test, as Redis gives it to Lua: integer -> integer, bulk -> string,
-- nil -> false, array -> table, status -> {ok = ...}, error -> {err = ...}.
local function decode(tokens, at)
  local token = tokens[at]
  local tag, rest = token:sub(1, 1), token:sub(2)
  if tag == 's' then
    return unhex(rest), at + 1
  elseif tag == 'i' then
    return math.tointeger(tonumber(rest)), at + 1
  elseif tag == 'n' then
    return false, at + 1
  elseif tag == 't' then
    return { ok = unhex(rest) }, at + 1
  elseif tag == 'e' then
    return { err = unhex(rest) }, at + 1
  elseif tag == 'a' then
    local items, next = {}, at + 1
    for i = 1, tonumber(rest) do
      items[i], next = decode(tokens, next)
    end
    return items, next
  end
  error('driver: cannot decode ' .. token)
end

local function split(line)
  local tokens = {}
  for token in line:gmatch('%S+') do
    tokens[#tokens + 1] = token
  end
  return tokens
end

local function ask(protected, ...)
  local args = { ... }
  local out = { 'CALL', protected and 'p' or 'c' }
  for i = 1, select('#', ...) do
    encode(args[i], out)
  end
  io.write(table.concat(out, ' '), '\n')
  io.flush()
  local reply = decode(split(io.read('l')), 1)
  if type(reply) == 'table' and reply.err and not protected then
    error(reply, 0)
  end
  return reply
end

local redis = {
  call = function(...)
    return ask(false, ...)
  end,
  pcall = function(...)
    return ask(true, ...)
  end,
  error_reply = function(message)
    return { err = message }
  end,
  status_reply = function(status)
    return { ok = status }
  end,
}

-- What a script may see: Redis' libraries (no io, os, require) and no `unpack` (Lua 5.4 has
-- none). Globals are locked as Redis 7 locks them: reading an unknown one or creating one fails.
local allowed = {
  'assert', 'error', 'ipairs', 'next', 'pairs', 'pcall', 'rawequal', 'rawget', 'rawlen', 'rawset', 'select',
  'setmetatable', 'getmetatable', 'tonumber', 'tostring', 'type', 'xpcall', 'string', 'table', 'math',
}
local function environment(keys, argv)
  local env = { KEYS = keys, ARGV = argv, redis = redis }
  for _, name in ipairs(allowed) do
    env[name] = _G[name]
  end
  return setmetatable(env, {
    __index = function(_, name)
      error('Script attempted to access nonexistent global variable \'' .. tostring(name) .. '\'', 2)
    end,
    __newindex = function(_, name)
      error('Attempt to modify a readonly table / create global variable \'' .. tostring(name) .. '\'', 2)
    end,
  })
end

for line in io.lines() do
  local tokens = split(line)
  if tokens[1] == 'RUN' then
    local name, text, count = unhex(tokens[2]), unhex(tokens[3]), tonumber(tokens[4])
    local keys, argv = {}, {}
    for i = 5, #tokens do
      if i - 4 <= count then
        keys[#keys + 1] = unhex(tokens[i])
      else
        argv[#argv + 1] = unhex(tokens[i])
      end
    end
    local chunk, syntax = load(text, '@' .. name, 't', environment(keys, argv))
    if not chunk then
      io.write('FAIL ', hex(syntax), '\n')
    else
      local ok, result = pcall(chunk)
      if ok then
        io.write('DONE ', table.concat(encode(result, {}), ' '), '\n')
      else
        local message = type(result) == 'table' and result.err or tostring(result)
        io.write('FAIL ', hex(message), '\n')
      end
    end
    io.flush()
  end
end
