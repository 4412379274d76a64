/**
 * Runs quorumlock's real Lua scripts (src/lua/sources.ts) the way Redis runs them, in fengari, a
 * Lua VM written in JavaScript. fengari is Lua 5.3; Redis embeds Lua 5.1. The differences our
 * scripts could meet are shimmed, so that a script computes here what it computes in Redis:
 *
 * - Numbers. Lua 5.1 has one number type (a double); fengari has 32-bit integers and floats, and
 *   `tonumber(time[1]) * 1000` would wrap around as an integer. So every number a script gets is
 *   a float: replies of redis.call, tonumber(), math.floor() and math.ceil(). Integral floats
 *   print as Lua 5.1 prints them ("%.14g": 1700000000123, not 1700000000123.0), by fengari's
 *   LUA_COMPAT_FLOATSTRING. Loop counters and `#t` stay (small) integers, which is invisible.
 *   string.format('%d', x) still needs x to fit in 32 bits here (it errors loudly otherwise).
 * - `unpack` is a global (table.unpack). Only the libraries Redis loads that our scripts could use
 *   are open: base, table, string, math.
 * - Globals are locked as in Redis 7: creating or reading an unknown global raises an error.
 *
 * Values cross the boundary as Redis converts them (scripting docs, "Conversion between Lua and
 * Redis data types"):
 * - Redis → Lua (redis.call replies): integer → number, bulk string → string, nil bulk → false,
 *   array → table, status → {ok = ...}, error → {err = ...} (redis.pcall) or a raised error
 *   (redis.call).
 * - Lua → Redis (the script's return value): number → integer (truncated), string → bulk,
 *   table → array up to the first nil (or {err = ...} → error, {ok = ...} → status), false → nil,
 *   true → integer 1, nil → nil.
 * - Arguments of redis.call: strings as they are, numbers as Redis formats them (integers in
 *   full, others as "%.17g"); anything else is an error.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';

/** An error reply ("-ERR ..."): its message as the server sends it. */
export class ErrorReply {
  constructor(readonly message: string) {}
}

/** A status reply ("+OK"). */
export class StatusReply {
  constructor(readonly status: string) {}
}

/** A RESP2 reply: integer, bulk string, nil, array, status or error. */
export type Reply = number | string | null | Reply[] | StatusReply | ErrorReply;

/** Runs one command (name first) on the server executing the script; errors come back as ErrorReply. */
export type Dispatch = (args: string[]) => Reply;

export const sha1 = (text: string): string => createHash('sha1').update(text).digest('hex');

/** C's "%.17g", which Redis uses to pass a non-integral Lua number to a command. */
function percent17g(value: number): string {
  if (Number.isInteger(value) && Math.abs(value) < 1e17) return String(value);
  if (!Number.isFinite(value)) return Number.isNaN(value) ? 'nan' : value > 0 ? 'inf' : '-inf';
  const exponent = Math.floor(Math.log10(Math.abs(value)));
  if (exponent < -4 || exponent >= 17) {
    const [mantissa, power] = value.toExponential(16).split('e') as [string, string];
    const trimmed = mantissa.includes('.') ? mantissa.replace(/0+$/, '').replace(/\.$/, '') : mantissa;
    const sign = power.startsWith('-') ? '-' : '+';
    return `${trimmed}e${sign}${power.replace(/^[-+]/, '').padStart(2, '0')}`;
  }
  const text = value.toPrecision(17);
  return text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
}

// fengari reads its configuration once, when it is first loaded: load it only from here, after
// asking for Lua 5.1's float formatting.
let fengariModule: any;
function loadFengari(): any {
  if (fengariModule) return fengariModule;
  const previous = process.env.FENGARICONF;
  const conf = { ...(previous ? JSON.parse(previous) : {}), LUA_COMPAT_FLOATSTRING: true };
  process.env.FENGARICONF = JSON.stringify(conf);
  try {
    fengariModule = createRequire(import.meta.url)('fengari');
  } finally {
    if (previous === undefined) delete process.env.FENGARICONF;
    else process.env.FENGARICONF = previous;
  }
  return fengariModule;
}

const PRELUDE = `
unpack = table.unpack
local rawtonumber, mathtype, floor, ceil = tonumber, math.type, math.floor, math.ceil
tonumber = function(value, base)
  local number
  if base == nil then number = rawtonumber(value) else number = rawtonumber(value, base) end
  if mathtype(number) == 'integer' then return number + 0.0 end
  return number
end
math.floor = function(x) return floor(x) + 0.0 end
math.ceil = function(x) return ceil(x) + 0.0 end
math.type = nil
dofile, loadfile, print = nil, nil, nil
KEYS, ARGV = {}, {}
setmetatable(_G, {
  __newindex = function(_, name) error("Script attempted to create global variable '" .. tostring(name) .. "'", 2) end,
  __index = function(_, name) error("Script attempted to access nonexistent global variable '" .. tostring(name) .. "'", 2) end,
})
`;

/**
 * One Lua state for every fake server (Redis has one per process; nothing survives a script run
 * here but the compiled functions, since globals are locked). Not reentrant: a script cannot
 * EVAL, as in Redis.
 */
export class LuaVM {
  readonly #f: any;
  readonly #L: any;
  readonly #compiled = new Map<string, number>();
  #dispatch: Dispatch | undefined;

  constructor() {
    const f = loadFengari();
    this.#f = f;
    const { lua, lauxlib, lualib, to_luastring } = f;
    const L = lauxlib.luaL_newstate();
    this.#L = L;
    for (const [name, open] of [
      ['_G', lualib.luaopen_base],
      ['table', lualib.luaopen_table],
      ['string', lualib.luaopen_string],
      ['math', lualib.luaopen_math],
    ] as const) {
      lauxlib.luaL_requiref(L, to_luastring(name), open, 1);
      lua.lua_pop(L, 1);
    }
    this.#installRedis();
    if (lauxlib.luaL_dostring(L, to_luastring(PRELUDE)) !== lua.LUA_OK) throw new Error(`lua-vm prelude: ${lua.lua_tojsstring(L, -1)}`);
  }

  /** Runs `body` (its sha1 `sha`) with KEYS and ARGV, sending its redis.call()s to `dispatch`. */
  run(sha: string, body: string, keys: readonly string[], argv: readonly string[], dispatch: Dispatch): Reply {
    const { lua, to_luastring } = this.#f;
    const L = this.#L;
    if (this.#dispatch) throw new Error('lua-vm: a script called a script');
    let ref = this.#compiled.get(sha);
    if (ref === undefined) {
      const code = to_luastring(body);
      if (this.#f.lauxlib.luaL_loadbuffer(L, code, code.length, to_luastring('@user_script')) !== lua.LUA_OK) {
        const message = lua.lua_tojsstring(L, -1);
        lua.lua_pop(L, 1);
        return new ErrorReply(`ERR Error compiling script (new function): ${message}`);
      }
      ref = this.#f.lauxlib.luaL_ref(L, lua.LUA_REGISTRYINDEX) as number;
      this.#compiled.set(sha, ref);
    }
    this.#setArray('KEYS', keys);
    this.#setArray('ARGV', argv);
    this.#dispatch = dispatch;
    const top = lua.lua_gettop(L);
    try {
      lua.lua_rawgeti(L, lua.LUA_REGISTRYINDEX, ref);
      const status = lua.lua_pcall(L, 0, 1, 0);
      if (status !== lua.LUA_OK) {
        const error = this.#fromLua(-1);
        const message = error instanceof ErrorReply ? error.message : typeof error === 'string' ? `ERR ${error}` : 'ERR unknown Lua error';
        return new ErrorReply(`${message} script: ${sha}, on @user_script.`);
      }
      return this.#fromLua(-1);
    } finally {
      this.#dispatch = undefined;
      lua.lua_settop(L, top);
      void to_luastring;
    }
  }

  #setArray(name: string, values: readonly string[]): void {
    const { lua, to_luastring } = this.#f;
    const L = this.#L;
    lua.lua_createtable(L, values.length, 0);
    values.forEach((value, index) => {
      lua.lua_pushstring(L, to_luastring(value));
      lua.lua_rawseti(L, -2, index + 1);
    });
    lua.lua_setglobal(L, to_luastring(name));
  }

  /** The `redis` table: call, pcall, error_reply, status_reply, sha1hex, log. */
  #installRedis(): void {
    const { lua, to_luastring } = this.#f;
    const L = this.#L;
    lua.lua_createtable(L, 0, 8);
    const set = (name: string, fn: (L: any) => number) => {
      lua.lua_pushjsfunction(L, fn);
      lua.lua_setfield(L, -2, to_luastring(name));
    };
    set('call', (state) => this.#call(state, true));
    set('pcall', (state) => this.#call(state, false));
    set('error_reply', (state) => {
      this.#pushReply(state, new ErrorReply(lua.lua_tojsstring(state, 1)));
      return 1;
    });
    set('status_reply', (state) => {
      this.#pushReply(state, new StatusReply(lua.lua_tojsstring(state, 1)));
      return 1;
    });
    set('sha1hex', (state) => {
      lua.lua_pushstring(state, to_luastring(sha1(lua.lua_tojsstring(state, 1))));
      return 1;
    });
    set('log', () => 0);
    set('replicate_commands', (state) => {
      lua.lua_pushboolean(state, true);
      return 1;
    });
    for (const [name, level] of [
      ['LOG_DEBUG', 0],
      ['LOG_VERBOSE', 1],
      ['LOG_NOTICE', 2],
      ['LOG_WARNING', 3],
    ] as const) {
      lua.lua_pushnumber(L, level);
      lua.lua_setfield(L, -2, to_luastring(name));
    }
    lua.lua_setglobal(L, to_luastring('redis'));
  }

  /** redis.call (raise = true) and redis.pcall. */
  #call(L: any, raise: boolean): number {
    const { lua } = this.#f;
    const count = lua.lua_gettop(L);
    let reply: Reply;
    const args: string[] = [];
    for (let index = 1; index <= count; index++) {
      const type = lua.lua_type(L, index);
      if (type === lua.LUA_TSTRING) args.push(lua.lua_tojsstring(L, index));
      else if (type === lua.LUA_TNUMBER) args.push(percent17g(lua.lua_tonumber(L, index)));
      else {
        args.length = 0;
        break;
      }
    }
    if (count === 0) reply = new ErrorReply('ERR Please specify at least one argument for this redis lib call');
    else if (args.length !== count) reply = new ErrorReply('ERR Lua redis lib command arguments must be strings or integers');
    else if (!this.#dispatch) reply = new ErrorReply('ERR redis.call outside a script');
    else reply = this.#dispatch(args);
    this.#pushReply(L, reply);
    if (raise && reply instanceof ErrorReply) return lua.lua_error(L);
    return 1;
  }

  /** A Redis reply as a Lua value, on top of the stack. */
  #pushReply(L: any, reply: Reply): void {
    const { lua, to_luastring } = this.#f;
    if (typeof reply === 'number') lua.lua_pushnumber(L, reply);
    else if (typeof reply === 'string') lua.lua_pushstring(L, to_luastring(reply));
    else if (reply === null) lua.lua_pushboolean(L, false);
    else if (Array.isArray(reply)) {
      lua.lua_createtable(L, reply.length, 0);
      reply.forEach((item, index) => {
        this.#pushReply(L, item);
        lua.lua_rawseti(L, -2, index + 1);
      });
    } else {
      const [field, text] = reply instanceof ErrorReply ? ['err', reply.message] : ['ok', reply.status];
      lua.lua_createtable(L, 0, 1);
      lua.lua_pushstring(L, to_luastring(text));
      lua.lua_setfield(L, -2, to_luastring(field));
    }
  }

  /** The Lua value at `index` as Redis replies with it. */
  #fromLua(index: number): Reply {
    const { lua, to_luastring } = this.#f;
    const L = this.#L;
    const at = lua.lua_absindex(L, index);
    switch (lua.lua_type(L, at)) {
      case lua.LUA_TSTRING:
        return lua.lua_tojsstring(L, at);
      case lua.LUA_TNUMBER:
        return Math.trunc(lua.lua_tonumber(L, at));
      case lua.LUA_TBOOLEAN:
        return lua.lua_toboolean(L, at) ? 1 : null;
      case lua.LUA_TTABLE: {
        for (const field of ['err', 'ok'] as const) {
          lua.lua_getfield(L, at, to_luastring(field));
          const isString = lua.lua_type(L, -1) === lua.LUA_TSTRING;
          const text = isString ? lua.lua_tojsstring(L, -1) : '';
          lua.lua_pop(L, 1);
          if (isString) return field === 'err' ? new ErrorReply(text) : new StatusReply(text);
        }
        const items: Reply[] = [];
        for (let position = 1; ; position++) {
          lua.lua_rawgeti(L, at, position);
          if (lua.lua_type(L, -1) === lua.LUA_TNIL) {
            lua.lua_pop(L, 1);
            break;
          }
          items.push(this.#fromLua(-1));
          lua.lua_pop(L, 1);
        }
        return items;
      }
      default:
        return null;
    }
  }
}

let shared: LuaVM | undefined;
/** The one Lua state all fake servers share (compiled scripts are cached by sha). */
export function sharedLuaVM(): LuaVM {
  shared ??= new LuaVM();
  return shared;
}
