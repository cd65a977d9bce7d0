-- POST one new Task per request, each under an Idempotency-Key of its own (a new logical
-- write every time: the cost of keeping the key and the answer with every write).
local counter = 0
local id = tostring({}):sub(8)
request = function()
  counter = counter + 1
  local body = '{"title": "bench ' .. id .. "-" .. counter .. '", "priority": ' .. (counter % 6) .. '}'
  return wrk.format("POST", "/v1/objects/Task",
    { ["Content-Type"] = "application/json", ["Idempotency-Key"] = "bench-" .. id .. "-" .. counter }, body)
end
