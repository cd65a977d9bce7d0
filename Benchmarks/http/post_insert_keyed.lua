-- POST one new Task per request, each under an Idempotency-Key of its own (a new logical
-- write every time: the cost of keeping the key and the answer with every write).
--
-- The keys are UUIDv7s (RFC 9562), as the README advises clients to send: the Unix time in
-- milliseconds (read through LuaJIT's FFI, since Lua's own clock tells whole seconds), then
-- random bits. Keys of one millisecond land in random order among themselves but all at the
-- end of the key index, as keys from many real clients do. (An earlier version sent
-- "bench-<thread>-<n>" with n unpadded, which does not sort in the order sent: "bench-a-10"
-- comes before "bench-a-9".)
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock, bench_timespec *tp);
]]
local CLOCK_REALTIME = 0
local now = ffi.new("bench_timespec")
local function unixMilliseconds()
  ffi.C.clock_gettime(CLOCK_REALTIME, now)
  return tonumber(now.tv_sec) * 1000 + math.floor(tonumber(now.tv_nsec) / 1000000)
end

local counter = 0
local id = tostring({}):sub(8)
math.randomseed(os.time() + tonumber(id, 16) % 100000)

local function uuid7()
  local ms = unixMilliseconds()
  return string.format("%08x-%04x-7%03x-%04x-%04x%08x",
    math.floor(ms / 0x10000), ms % 0x10000,                  -- unix_ts_ms, 48 bits
    math.random(0, 0xfff),                                   -- version 7, rand_a
    0x8000 + math.random(0, 0x3fff),                         -- variant 10, rand_b
    math.random(0, 0xffff), math.random(0, 0xffffffff))
end

request = function()
  counter = counter + 1
  local body = '{"title": "bench ' .. id .. "-" .. counter .. '", "priority": ' .. (counter % 6) .. '}'
  return wrk.format("POST", "/v1/objects/Task",
    { ["Content-Type"] = "application/json", ["Idempotency-Key"] = uuid7() }, body)
end
