-- The plain side of bench-idempotency: post_insert_keyed.lua's requests with the key sent
-- under a header the server ignores (X-Bench-Key), so that both sides make the same UUIDv7s
-- and send the same bytes, and the difference measured is what honoring the key costs the
-- server (wrk shares the machine's two cores with it).
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local uuid7 = dofile(here .. "uuid7.lua")
local counter = 0
local id = tostring({}):sub(8)

request = function()
  counter = counter + 1
  local body = '{"title": "bench ' .. id .. "-" .. counter .. '", "priority": ' .. (counter % 6) .. '}'
  return wrk.format("POST", "/v1/objects/Task",
    { ["Content-Type"] = "application/json", ["X-Bench-Key"] = uuid7() }, body)
end
