-- POST one new Task per request, each under an Idempotency-Key of its own (a new logical
-- write every time: the cost of keeping the key and the answer with every write). The keys
-- are UUIDv7s (uuid7.lua), as the README advises. (An earlier version sent
-- "bench-<thread>-<n>" with n unpadded, which does not sort in the order sent: "bench-a-10"
-- comes before "bench-a-9".)
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local uuid7 = dofile(here .. "uuid7.lua")
local counter = 0
local id = tostring({}):sub(8)

request = function()
  counter = counter + 1
  local body = '{"title": "bench ' .. id .. "-" .. counter .. '", "priority": ' .. (counter % 6) .. '}'
  return wrk.format("POST", "/v1/objects/Task",
    { ["Content-Type"] = "application/json", ["Idempotency-Key"] = uuid7() }, body)
end
