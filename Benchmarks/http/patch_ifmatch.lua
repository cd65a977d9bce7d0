-- PATCH random Tasks with If-Match, keeping the version each response reports, so requests are
-- based on the current version. Each wrk thread patches its own range of keys (threads do not
-- share the versions they learn); two requests of one thread in flight on one object can still
-- meet, and the later one gets a 409.
local n = tonumber(os.getenv("TASKS") or "100000")
local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("index", counter)
  table.insert(threads, thread)
end

function init(args)
  local count = #threads > 0 and #threads or tonumber(os.getenv("WRK_THREADS") or "2")
  local size = math.floor(n / count)
  first = (index - 1) * size + 1
  last = index * size
  versions = {}
  math.randomseed(os.time() + index * 7919)
end

request = function()
  local pk = math.random(first, last)
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
