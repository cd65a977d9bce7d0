-- POST one new Task per request, each under an Idempotency-Key of its own (a new logical
-- write every time: the cost of keeping the key and the answer with every write).
--
--   wrk ... -s post_insert_keyed.lua URL [-- KIND [HEADER]]
--
-- KIND is uuid7 (the default: time-ordered, as the README advises) or uuid4 (random), from
-- idempotency_keys.lua. HEADER is Idempotency-Key by default; bench-idempotency's plain side
-- sends the same keys under X-Bench-Key, which the server ignores, so that wrk (sharing the
-- two cores with the server) does the same work on both sides. (An earlier version sent
-- "bench-<thread>-<n>" with n unpadded, which does not sort in the order sent: "bench-a-10"
-- comes before "bench-a-9".)
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
local keys = dofile(here .. "idempotency_keys.lua")
local counter = 0
local id = tostring({}):sub(8)
local makeKey, header = keys.uuid7, "Idempotency-Key"

function init(args)
  if args[1] then
    makeKey = keys[args[1]] or error("post_insert_keyed.lua: the key kind is uuid7 or uuid4, not " .. args[1])
  end
  header = args[2] or header
end

request = function()
  counter = counter + 1
  local body = '{"title": "bench ' .. id .. "-" .. counter .. '", "priority": ' .. (counter % 6) .. '}'
  return wrk.format("POST", "/v1/objects/Task",
    { ["Content-Type"] = "application/json", [header] = makeKey() }, body)
end
