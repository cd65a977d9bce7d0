-- POST one new Task per request.
local counter = 0
local id = tostring({}):sub(8)
request = function()
  counter = counter + 1
  local body = '{"title": "bench ' .. id .. "-" .. counter .. '", "priority": ' .. (counter % 6) .. '}'
  return wrk.format("POST", "/v1/objects/Task", { ["Content-Type"] = "application/json" }, body)
end
