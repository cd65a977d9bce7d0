-- The Idempotency-Keys bench-idempotency sends, loaded with dofile by post_insert_keyed.lua:
--
-- uuid7(): a UUIDv7 (RFC 9562), as the README advises clients to send: the Unix time in
-- milliseconds (through LuaJIT's FFI, since Lua's own clock tells whole seconds), then random
-- bits. Keys of one millisecond land in random order among themselves but all at the end of
-- the key index, as keys from many real clients do.
-- uuid4(): a random UUIDv4, whose index entry lands on a random page.
local ffi = require("ffi")
pcall(ffi.cdef, [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock, bench_timespec *tp);
]])
local CLOCK_REALTIME = 0
local now = ffi.new("bench_timespec")

local function unixMilliseconds()
  ffi.C.clock_gettime(CLOCK_REALTIME, now)
  return tonumber(now.tv_sec) * 1000 + math.floor(tonumber(now.tv_nsec) / 1000000)
end

math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 100000)

local keys = {}

function keys.uuid7()
  local ms = unixMilliseconds()
  return string.format("%08x-%04x-7%03x-%04x-%04x%08x",
    math.floor(ms / 0x10000), ms % 0x10000,                  -- unix_ts_ms, 48 bits
    math.random(0, 0xfff),                                   -- version 7, rand_a
    0x8000 + math.random(0, 0x3fff),                         -- variant 10, rand_b
    math.random(0, 0xffff), math.random(0, 0xffffffff))
end

function keys.uuid4()
  return (string.gsub("xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", "[xy]", function(c)
    local v = (c == "x") and math.random(0, 15) or math.random(8, 11)
    return string.format("%x", v)
  end))
end

return keys
