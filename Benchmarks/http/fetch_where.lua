-- A fetch with a 2-clause predicate, limit 20, the constants varying.
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
request = function()
  local priority = math.random(0, 5)
  local done = math.random(0, 1) == 1 and "YES" or "NO"
  local where = "priority%20%3E%3D%20" .. priority .. "%20AND%20done%20%3D%3D%20" .. done
  return wrk.format("GET", "/v1/objects/Task?where=" .. where .. "&limit=20")
end
