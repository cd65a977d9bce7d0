-- PATCH random Tasks with If-Match, keeping the version each response reports, so most
-- requests are based on the current version (two in flight on one object: the later gets 409).
local n = tonumber(os.getenv("TASKS") or "100000")
local versions = {}
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
request = function()
  local pk = math.random(1, n)
  local version = versions[pk] or 1
  return wrk.format("PATCH", "/v1/objects/Task/" .. pk,
    { ["Content-Type"] = "application/json", ["If-Match"] = '"' .. version .. '"' },
    '{"estimate": ' .. math.random(1, 100) .. '}')
end
response = function(status, headers, body)
  local pk, version = body:match('"_id":"Task/(%d+)","_version":(%d+)')
  if pk then versions[tonumber(pk)] = tonumber(version) end
  if status == 409 then
    local object, current = body:match('"object":"Task/(%d+)","oldVersion":%d+,"newVersion":(%d+)')
    if object then versions[tonumber(object)] = tonumber(current) end
  end
end
