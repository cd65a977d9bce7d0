-- POST one new Task per request under a random UUIDv4 Idempotency-Key, as real clients send.
local counter = 0
local id = tostring({}):sub(8)
math.randomseed(os.time() + tonumber(id, 16) % 100000)
local function uuid()
  return (string.gsub("xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", "[xy]", function(c)
    local v = (c == "x") and math.random(0, 15) or math.random(8, 11)
    return string.format("%x", v)
  end))
end
request = function()
  counter = counter + 1
  local body = '{"title": "bench ' .. id .. "-" .. counter .. '", "priority": ' .. (counter % 6) .. '}'
  return wrk.format("POST", "/v1/objects/Task",
    { ["Content-Type"] = "application/json", ["Idempotency-Key"] = uuid() }, body)
end
