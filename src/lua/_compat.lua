-- What differs between the Lua of the engines: Redis, Valkey and KeyDB embed Lua 5.1, which has a
-- global `unpack`; Dragonfly embeds Lua 5.4, which has only `table.unpack`. Arithmetic stays in
-- integers everywhere (no `/` whose result is returned or passed to a command): in Lua 5.4 `/`
-- always yields a float, which a reply or a command argument would carry as "2.0"
-- (test/unit/lua54.test.ts runs every script under Lua 5.4 and checks this).
-- Provides: unpack
-- Needs: nothing
local unpack = table.unpack or unpack
